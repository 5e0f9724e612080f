"""The labelled corruption catalogue (``practice_loop.harness.catalogue``, drawn by
``practice_strategies.corruptions``): fail-closed refusal.

ARCHITECTURE §3 "fail-closed refusal": every labelled corruption gives its typed refusal and
nothing else. One property per entry (a) draws a valid chain, applies the entry's violation
and checks the exact typed outcome, that no exception escapes, no partial record, attempt,
consumption or answer appears, the inputs are left as they were and the outcome reproduces.
The meta-tests (b) hold the catalogue to the ADR text, written out below: every row of
ADR-0228 §16 and ADR-0231 §17, every initialization check of ADR-0228 §9, every numbered
precondition of ADR-0231 §7.3 and the hostile values of ARCHITECTURE §2 have entries, with
the outcome the ADR requires. (c) Every failure message names the entry's id and clauses.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.harness.examples import direction_unbound
from practice_loop.kernel import (
    CANDIDATE_OPERATOR_SET,
    GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    MISSING_ROLE_CANDIDATE_POLICY,
    AnswerRefusal,
    AnswerRefusalReason,
    CandidateOperatorInput,
    CandidateOperatorRefusal,
    CandidateOperatorResult,
    CanonicalizationError,
    CanonicalReason,
    ComputeBudgetDecision,
    ContractResidual,
    GeometricSearchRun,
    OpenedSearchRun,
    OperatorRefusalReason,
    ProofGatedAnswer,
    RecordDefect,
    ReplayRefusal,
    RunDisposition,
    RunExhaustionCode,
    RunRefusalReason,
    SealedPracticeTrace,
    SearchGateDecision,
    SearchRunRefusal,
    TraceVerification,
    candidate_operator_input,
    canonical_json,
    decode_canonical,
    load_sealed_trace,
    open_search_run,
    practice_case,
    propose_candidate,
    record_attempts,
)
from practice_loop.kernel.record import inspect_record
from practice_loop.kernel.search_run import GeometricSearchInput
from practice_loop.kernel.trace import sealed_trace_bytes
from practice_strategies import build_chain, eligible_chains, oracle, share
from practice_strategies.corruptions import (
    CATALOGUE,
    Attack,
    Corruption,
    Expected,
    by_clause,
    by_id,
    observe,
    operator_chains,
    perform,
    stage_of,
)
from practice_strategies.vocabulary import FORBIDDEN_RUN_FIELDS

D = RunDisposition
BUDGET_CODES = {
    RunExhaustionCode.MAX_CANDIDATES_REACHED,
    RunExhaustionCode.MAX_DEPTH_REACHED,
    RunExhaustionCode.MAX_STEPS_REACHED,
}

# ------------------------------------------------------------------------------------------
# The ADR text the catalogue is held to, written out here rather than read from the kernel

# ADR-0228 §16, "Failure | Required outcome", row by row.
ADR_0228_16 = {
    1: "Gate is blocked, ineligible, or unassessable -> SearchRunRefusal(blocked_by_gate)",
    2: "Budget is blocked, zero, or unassessable -> SearchRunRefusal(blocked_by_budget)",
    3: "Gate/budget identity or digest mismatch -> SearchRunRefusal(invalid_input)",
    4: "Problem-frame, assessment, or residual identity mismatch -> invalid_input",
    5: "Unsupported schema, gate, budget, operator-set, or run policy version -> invalid_input",
    6: "Negative structural limit -> SearchRunRefusal(invalid_input)",
    7: "max_parallelism != 1 in v1 -> SearchRunRefusal(invalid_input)",
    8: "Empty operator set -> deterministic zero-attempt exhausted_no_candidate run",
    9: "Next charge would exceed a hard ceiling -> stop before it; keep prior; typed exhaustion",
    10: "Candidate digest or operator declaration cannot be reproduced -> stop fail-closed",
    11: "Replay is missing -> candidate_replay_pending; original refusal remains",
    12: "Future replay refuses all candidates -> replay refused; original refusal remains",
    13: "Future replay reports closure -> record external closure only; the run emits no answer",
}

# ADR-0228 §9, "Initialization must fail closed when any of the following holds".
ADR_0228_9 = {
    1: "the budget is blocked, zero, or unassessable",
    2: "max_candidates == 0 or max_steps == 0",
    3: "any structural limit is negative",
    4: "max_parallelism != 1 in v1",
    5: "budget_id does not reproduce from its canonical payload",
    6: "the budget's gate_decision_id does not equal the supplied gate identity",
    7: "the budget's gate policy version or gate input digest does not equal the gate record",
    8: "the gate's residual identities do not equal the supplied residual identities",
    9: "the gate is not ELIGIBLE",
    10: "the budget or run policy version is unsupported",
    11: "any required identity is malformed or absent",
}

# ADR-0231 §17: every failure's required outcome is CandidateOperatorRefusal.
ADR_0231_17 = {
    1: "Unsupported operator policy",
    2: "Unsupported operator name/version",
    3: "Unsupported residual kind",
    4: "Unsupported residual code",
    5: "Unsupported candidate organ",
    6: "Ineligible SearchGateDecision",
    7: "Non-allowed ComputeBudgetDecision",
    8: "Run identity mismatch",
    9: "Budget/run mismatch",
    10: "Gate/budget mismatch",
    11: "Missing residual fields required by operator",
    12: "Missing or ambiguous typed cue required by the v1 operator",
    13: "Malformed evidence spans",
    14: "Attempt index exceeds budget",
    15: "Attempt index exceeds max_attempts_per_run",
    16: "Fixed budget charge exceeds structural budget",
    17: "max_parallelism != 1",
    18: "Operator-set mismatch",
    19: "Candidate reconstruction cannot reproduce canonical identity",
}

# ADR-0231 §7.3: "Any failed validation returns CandidateOperatorRefusal".
ADR_0231_7_3 = {
    1: 'operator_policy_version == "candidate_operator.v1"',
    2: 'operator_name == "missing_role_candidate"',
    3: 'operator_version == "missing_role_candidate.v1"',
    4: 'residual_kind == "missing_role"',
    5: 'candidate_organ == "unary_delta_transition" on the residual/gate chain',
    6: 'residual_code == "direction_unbound" for v1',
    7: "SearchGateDecision.status == SearchGateStatus.ELIGIBLE",
    8: 'SearchGateDecision.reason_code == "eligible_missing_role"',
    9: "ComputeBudgetDecision.status == ComputeBudgetStatus.BUDGET_ALLOWED",
    10: 'ComputeBudgetDecision.reason_code == "budget_allowed_missing_role"',
    11: "ComputeBudgetDecision.gate_decision_id == SearchGateDecision.decision_id",
    12: "GeometricSearchRun.gate_decision_id == SearchGateDecision.decision_id",
    13: "GeometricSearchRun.budget_id == ComputeBudgetDecision.budget_id",
    14: "GeometricSearchRun.operator_set_id == operator_set_id",
    15: "GeometricSearchRun.operator_set_version == operator_set_version",
    16: "attempt_index >= 0",
    17: "attempt_index < ComputeBudgetDecision.max_candidates",
    18: "attempt_index < CandidateOperatorPolicy.max_attempts_per_run",
    19: "The fixed operator charge fits within max_candidates, max_depth, and max_steps",
    20: "ComputeBudgetDecision.max_parallelism == 1",
    21: "Evidence spans are valid, exact, ordered, and already justified",
    22: "schema_versions and policy_versions contain unique names in ascending lexical order",
}

HASHABLE = "ARCHITECTURE §2 hashable values"
LOADING = "ARCHITECTURE §2 loading a persisted record"

# ARCHITECTURE §2 "Hashable values": each hostile value, the stage it is fed to, and the
# entry that labels it.
HOSTILE_VALUES = {
    "bool for int (record)": "canonical/bool-for-int-record",
    "bool for int (span)": "canonical/bool-for-int-span",
    "bool for int (run)": "canonical/bool-for-int-run",
    "bool for int (operator)": "ADR-0231/7.2-input-attempt-index-bool",
    "bool for int (loader)": "loader/trace-bool-for-int",
    "float": "canonical/float",
    "NaN": "canonical/nan",
    "int above 2**53 - 1": "canonical/int-above-safe-range",
    "int below -(2**53 - 1)": "canonical/int-below-safe-range",
    "non-str key": "canonical/int-key",
    "str-subclass key": "canonical/str-subclass-key",
    "str-subclass value": "canonical/str-subclass-value",
    "IntEnum value": "canonical/int-enum-value",
    "lone surrogate value": "canonical/lone-surrogate-value",
    "lone surrogate key": "canonical/lone-surrogate-key",
    "depth beyond the cap": "canonical/depth-beyond-cap",
    "nodes beyond the cap": "canonical/nodes-beyond-cap",
    "text beyond the cap": "canonical/text-beyond-cap",
}
# "Loading a persisted record": raw bytes refused by decode_canonical, and a stored trace.
LOADER_VALUES = {
    "float": "loader/float",
    "NaN": "loader/nan",
    "int beyond the safe range": "loader/int-above-safe-range",
    "oversized int literal": "loader/huge-int-literal",
    "lone surrogate": "loader/lone-surrogate-escape",
    "invalid UTF-8": "loader/invalid-utf8",
    "duplicate key": "loader/duplicate-key",
    "depth beyond the cap": "loader/depth-beyond-cap",
    "size beyond the cap": "loader/size-beyond-cap",
    "not the stored bytes exactly": "loader/spacing",
    "trace id that does not reproduce": "loader/trace-id-forged",
}


# ------------------------------------------------------------------------------------------
# The check one entry must pass, with every failure naming the entry


def _keys(value: object) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_keys(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(item) for item in value))
    return set()


def _snapshot(attack: Attack) -> list[tuple[str, str]]:
    """What every argument holds (``repr`` reaches every field of a dataclass record)."""
    return [(name, repr(value)) for name, value in attack.arguments.items()]


def _bytes(outcome: object) -> bytes | str:
    if hasattr(outcome, "to_json"):
        return canonical_json(outcome.to_json())
    return repr(observe(outcome))


def _named_identity(record: object, record_type: type, read: Any) -> str | None:
    """The identity a refusal may name for ``record``: only when it validates on its own."""
    return read(record) if inspect_record(record, record_type) is None else None


def _check_run_refusal(refusal: SearchRunRefusal, attack: Attack, label: str) -> None:
    """ADR-0228 §7: the refusal names an identity only when its record validated alone."""
    assert refusal.outcome_id == oracle.outcome_id(refusal), f"{label}: outcome_id"
    arguments = attack.arguments
    if attack.function is open_search_run:
        expected = (
            _named_identity(
                arguments["search_input"], GeometricSearchInput, oracle.search_input_digest
            ),
            _named_identity(
                arguments["gate_decision"], SearchGateDecision, oracle.gate_decision_id
            ),
            _named_identity(arguments["budget_decision"], ComputeBudgetDecision, oracle.budget_id),
        )
    else:
        opened = arguments["opened_run"]
        valid = inspect_record(opened, OpenedSearchRun) is None
        expected = tuple(
            getattr(opened, name) if valid else None
            for name in ("input_digest", "gate_decision_id", "budget_id")
        )
    named = (refusal.input_digest, refusal.gate_decision_id, refusal.budget_id)
    assert named == expected, f"{label}: the refusal names {named}, expected {expected}"


def _check_run(run: GeometricSearchRun, attack: Attack, label: str) -> None:
    assert run.run_id == oracle.run_id(run), f"{label}: run_id does not reproduce"
    kept, proposed = run.candidate_attempts, attack.proposed
    assert kept == proposed[: len(kept)], f"{label}: the kept attempts are not a prefix"
    consumed = run.budget_consumed
    accounting = (
        consumed.candidates_considered == len(kept) <= consumed.max_candidates,
        consumed.depth_reached == max((a.depth for a in kept), default=0) <= consumed.max_depth,
        consumed.steps_used == sum(a.budget_charge.steps for a in kept) <= consumed.max_steps,
        consumed.parallelism_used == (1 if kept else 0) <= consumed.max_parallelism == 1,
    )
    assert all(accounting), f"{label}: ADR-0228 §9 accounting fails: {consumed}"
    stopped = run.exhaustion_code in BUDGET_CODES
    assert consumed.exhausted is stopped, f"{label}: exhausted is {consumed.exhausted}"
    if stopped:
        assert len(kept) < len(proposed), f"{label}: a ceiling stop that dropped nothing"
    else:
        assert kept == proposed, f"{label}: attempts dropped without a ceiling stop"
    if run.exhaustion_code is RunExhaustionCode.OPERATOR_SET_EMPTY:
        zero = (consumed.candidates_considered, consumed.depth_reached, consumed.steps_used)
        assert zero == (0, 0, 0) and kept == (), f"{label}: an empty set consumed {consumed}"


def _check_operator_refusal(refusal: CandidateOperatorRefusal, attack: Attack, label: str) -> None:
    assert refusal.operator_refusal_id == oracle.operator_refusal_id(refusal), f"{label}: id"
    arguments = attack.arguments
    expected = (
        _named_identity(
            arguments["operator_input"], CandidateOperatorInput, oracle.operator_input_digest
        ),
        _named_identity(arguments["opened_run"], OpenedSearchRun, lambda r: r.run_id),
        _named_identity(arguments["residual"], ContractResidual, lambda r: r.residual_id),
    )
    named = (refusal.input_digest, refusal.geometric_search_run_id, refusal.residual_id)
    assert named == expected, f"{label}: the refusal names {named}, expected {expected}"


def _check_answer_refusal(refusal: AnswerRefusal, attack: Attack, label: str) -> None:
    assessment = attack.arguments["assessment"]
    assert refusal.original_contract_assessment_id == assessment.assessment_id, label
    if refusal.reason_codes[0] == AnswerRefusalReason.ORIGINAL_REFUSAL_STANDS.value:
        blockers = tuple(blocker.code.value for blocker in assessment.blockers)
        assert refusal.reason_codes[1:] == blockers, f"{label}: the original refusal is lost"


def check(entry: Corruption, chain: Any) -> object:
    """Apply ``entry`` to ``chain`` and check its outcome; every failure names the entry."""
    label = entry.label()
    try:
        attack = entry.build(chain)
    except Exception as error:
        raise AssertionError(f"{label}: building the corruption raised {error!r}") from error
    assert stage_of(attack.function) == entry.stage, f"{label}: attacks {attack.function}"
    before = _snapshot(attack)
    try:
        outcome = perform(attack)
        again = perform(attack)
        observed = observe(outcome)
    except Exception as error:
        raise AssertionError(f"{label}: {type(error).__name__} escaped: {error!r}") from error

    # Exactly the typed outcome, and nothing else.
    assert observed == entry.expected, f"{label}: expected {entry.expected}, got {observed}"
    assert _bytes(again) == _bytes(outcome), f"{label}: the outcome does not reproduce"
    assert _snapshot(attack) == before, f"{label}: an input was changed"

    # No answer, no partial record.
    assert type(outcome) not in (ProofGatedAnswer, CandidateOperatorResult), label
    if hasattr(outcome, "to_json"):
        assert inspect_record(outcome, type(outcome)) is None, f"{label}: malformed outcome"
        found = _keys(outcome.to_json()) & FORBIDDEN_RUN_FIELDS
        assert not found, f"{label}: the outcome carries {sorted(found)}"
    if type(outcome) in (SearchRunRefusal, CandidateOperatorRefusal, ReplayRefusal, AnswerRefusal):
        partial = ("candidate_attempts", "candidate_attempt", "reconstruction", "budget_consumed")
        present = [name for name in partial if hasattr(outcome, name)]
        assert not present, f"{label}: a refusal carries {present}"
    if type(outcome) is SearchRunRefusal:
        _check_run_refusal(outcome, attack, label)
    elif type(outcome) is GeometricSearchRun:
        _check_run(outcome, attack, label)
    elif type(outcome) is CandidateOperatorRefusal:
        _check_operator_refusal(outcome, attack, label)
    elif type(outcome) is AnswerRefusal:
        _check_answer_refusal(outcome, attack, label)
    elif type(outcome) is TraceVerification:
        assert not outcome.valid and outcome.trace_id is None, f"{label}: {outcome}"
    return outcome


# ------------------------------------------------------------------------------------------
# (a) One property per entry


# Entries whose payloads sit at a size cap (100,000 nodes, 8 MiB): every example walks or
# copies the whole payload, so they get the minimum number of examples.
AT_A_SIZE_CAP = frozenset(
    {
        "canonical/nodes-beyond-cap",
        "canonical/text-beyond-cap",
        "loader/size-beyond-cap",
        "loader/huge-int-literal",
    }
)


def _property(entry: Corruption, data: st.DataObject) -> None:
    check(entry, data.draw(entry.valid_chains(), label="valid chain"))


_ROW = re.compile(r"(ADR-0228) §(16) row (\d+)|(ADR-0231) §(17) row (\d+)")


def _with_obligations(entry: Corruption) -> Any:
    """The entry as a parameter that names the failure rows it proves (docs/obligations.toml),
    so the reviewers' gate traces each §16 / §17 row to its catalogue entries."""
    ids = []
    for clause in entry.clauses:
        match = _ROW.fullmatch(clause)
        if match is not None:
            adr, section, row = (part for part in match.groups() if part is not None)
            ids.append(f"{adr}/{section}.{row}")
    marks = [pytest.mark.obligation(*ids)] if ids else []
    return pytest.param(entry, marks=marks, id=entry.id)


# 170-odd entries: each gets a fifteenth of the profile (at least 5 examples, see ``share``).
@pytest.mark.parametrize(
    "entry", [_with_obligations(e) for e in CATALOGUE if e.id not in AT_A_SIZE_CAP]
)
@share(15)
@given(data=st.data())
def test_corruption_gives_exactly_its_typed_outcome(entry, data):
    """ARCHITECTURE §3 fail-closed refusal, the clause each entry names: the corrupted chain
    gives exactly the entry's typed outcome; no exception escapes; no partial record,
    attempt, consumption or answer; inputs unchanged; the outcome reproduces."""
    _property(entry, data)


@pytest.mark.parametrize("entry", [_with_obligations(by_id(i)) for i in sorted(AT_A_SIZE_CAP)])
@share(1_000)
@given(data=st.data())
def test_corruption_at_a_size_cap_gives_exactly_its_typed_outcome(entry, data):
    """As above, for the entries whose payloads sit at a size cap (ARCHITECTURE §2)."""
    _property(entry, data)


# ------------------------------------------------------------------------------------------
# (b) The catalogue against the ADR text


def test_ids_are_unique_and_stable_in_form():
    """Ids are stable labels: unique, and ADR-number/clause or canonical/loader families."""
    ids = [entry.id for entry in CATALOGUE]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    pattern = re.compile(r"(ADR-02(28|31)/[0-9][0-9.]*-[a-z0-9-]+|(canonical|loader)/[a-z0-9-]+)")
    assert [i for i in ids if not pattern.fullmatch(i)] == []
    for entry in CATALOGUE:
        assert entry.comment and "\n" not in entry.comment, entry.id
        assert by_id(entry.id) is entry


def _numbered(clause: str) -> dict[int, tuple[Corruption, ...]]:
    found: dict[int, tuple[Corruption, ...]] = {}
    for entry in CATALOGUE:
        for named in entry.clauses:
            if named.startswith(clause + " "):
                number = int(named.rsplit(" ", 1)[1])
                found[number] = found.get(number, ()) + (entry,)
    return found


@pytest.mark.parametrize(
    ("clause", "table"),
    [
        ("ADR-0228 §16 row", ADR_0228_16),
        ("ADR-0228 §9 check", ADR_0228_9),
        ("ADR-0231 §17 row", ADR_0231_17),
        ("ADR-0231 §7.3 item", ADR_0231_7_3),
    ],
)
def test_every_numbered_clause_has_an_entry(clause, table):
    """Every row of ADR-0228 §16 and ADR-0231 §17, every check of ADR-0228 §9 and every
    precondition of ADR-0231 §7.3 is violated by at least one entry; no entry names a number
    the ADR does not have."""
    found = _numbered(clause)
    missing = {n: text for n, text in table.items() if n not in found}
    assert not missing, f"{clause}: no entry for {missing}"
    assert set(found) <= set(table), f"{clause}: unknown numbers {set(found) - set(table)}"
    for number in table:
        assert by_clause(f"{clause} {number}") == found[number]


def _row_outcome_holds(row: int, expected: Expected) -> bool:
    """ADR-0228 §16's required outcome for ``row``, read from the table above."""
    kind, codes = expected.kind, expected.codes
    refused = {1: D.BLOCKED_BY_GATE, 2: D.BLOCKED_BY_BUDGET} | dict.fromkeys(
        range(3, 8), D.INVALID_INPUT
    )
    if row in refused:
        return kind is SearchRunRefusal and codes[0] is refused[row]
    if row == 8:
        return codes == (D.EXHAUSTED_NO_CANDIDATE, RunExhaustionCode.OPERATOR_SET_EMPTY)
    if row == 9:
        return kind is GeometricSearchRun and codes[1] in BUDGET_CODES
    stands = (AnswerRefusalReason.ORIGINAL_REFUSAL_STANDS,)
    pending = kind is GeometricSearchRun and codes[0] is D.CANDIDATE_REPLAY_PENDING
    refusal = kind in (SearchRunRefusal, ReplayRefusal) and (
        kind is ReplayRefusal or codes[0] is D.INVALID_INPUT
    )
    if row == 10:  # stop fail-closed: no closure, no answer
        return refusal
    if row == 11:  # pending; the original refusal remains
        return pending or (kind is AnswerRefusal and codes == stands)
    # Rows 12 and 13: the original refusal remains and the run is not rewritten to closure.
    return (kind is AnswerRefusal and codes == stands) or pending or refusal


@pytest.mark.parametrize("row", sorted(ADR_0228_16))
def test_adr_0228_16_entries_state_the_rows_outcome(row):
    """ADR-0228 §16: each entry's stated outcome is the one its row requires."""
    for entry in by_clause(f"ADR-0228 §16 row {row}"):
        assert _row_outcome_holds(row, entry.expected), f"{entry.label()}: {entry.expected}"


def test_adr_0228_9_entries_refuse_initialization():
    """ADR-0228 §9: initialization fails closed: a refusal of the run, never a run."""
    for entry in by_clause("ADR-0228 §9"):
        assert entry.expected.kind is SearchRunRefusal, entry.label()
        assert entry.expected.codes[0] in {
            D.NOT_STARTED,
            D.BLOCKED_BY_BUDGET,
            D.BLOCKED_BY_GATE,
            D.INVALID_INPUT,
        }, entry.label()


def test_adr_0231_entries_are_operator_refusals():
    """ADR-0231 §7.3 and §17: every failure is a CandidateOperatorRefusal."""
    for entry in by_clause("ADR-0231 §17") + by_clause("ADR-0231 §7.3"):
        assert entry.expected.kind is CandidateOperatorRefusal, entry.label()
        assert entry.stage == "operators.propose_candidate", entry.label()


@pytest.mark.parametrize(
    ("table", "clause", "stages"),
    [
        (
            HOSTILE_VALUES,
            HASHABLE,
            {
                "identity.canonical_json",
                "record.inspect_record",
                "span.SourceSpan",
                "search_run.open_search_run",
                "operators.propose_candidate",
                "trace.load_sealed_trace",
            },
        ),
        (LOADER_VALUES, LOADING, {"identity.decode_canonical", "trace.load_sealed_trace"}),
    ],
    ids=["hashable-values", "loading"],
)
def test_every_hostile_value_of_the_architecture_page_has_an_entry(table, clause, stages):
    """ARCHITECTURE §2: bool for int, float, NaN, ints beyond +/-(2**53 - 1), non-str and
    str-subclass keys, lone surrogates, depth and size beyond the caps, against
    canonical_json, record checks and stages, and as raw bytes against the loader."""
    for value, identifier in table.items():
        entry = by_id(identifier)
        assert clause in entry.clauses, (value, entry.label())
        assert entry.stage in stages, (value, entry.stage)
    assert {entry.stage for entry in by_clause(clause)} <= stages


def test_every_closed_refusal_code_is_labelled():
    """The closed vocabularies are labelled in full: every CanonicalReason, every reason a
    run refuses with and every reason the operator refuses with is some entry's outcome."""
    stated = {code for entry in CATALOGUE for code in entry.expected.codes}
    for vocabulary in (CanonicalReason, RunRefusalReason, OperatorRefusalReason):
        missing = sorted(member.name for member in vocabulary if member not in stated)
        assert not missing, f"{vocabulary.__name__}: no entry for {missing}"


def test_by_clause_matches_whole_clauses_only():
    """``by_clause`` selects on whole clauses: row 1 is not row 10."""
    row_one = by_clause("ADR-0228 §16 row 1")
    assert row_one and all("ADR-0228 §16 row 1" in entry.clauses for entry in row_one)
    assert set(by_clause("ADR-0228 §16")) >= set(row_one) | set(by_clause("ADR-0228 §16 row 10"))
    assert by_clause("ADR-0228 §16 row 99") == ()


# ------------------------------------------------------------------------------------------
# (c) Failure messages name the entry; the check can fail; controls


def _fixed_chain(entry: Corruption):
    """A valid chain from the shipped example, for entries that start from any eligible or
    operator chain."""
    v1 = build_chain(direction_unbound().frame)
    v2 = build_chain(
        direction_unbound().frame,
        operator_set=CANDIDATE_OPERATOR_SET,
        run_policy_version=GEOMETRIC_SEARCH_RUN_V2_POLICY_VERSION,
    )
    return v2 if entry.valid_chains in (operator_chains,) else v1


@pytest.mark.parametrize(
    "identifier",
    [
        "ADR-0228/16.3-budget-names-another-gate",
        "ADR-0228/16.9-max-steps",
        "ADR-0231/17.18-operator-set-empty",
        "canonical/nan",
        "loader/duplicate-key",
        "loader/trace-id-forged",
    ],
)
def test_a_wrong_expectation_fails_naming_the_entry(identifier):
    """(c): the check fails when the stated outcome is not the one produced, and its message
    names the entry's id and clause."""
    entry = by_id(identifier)
    chain = _fixed_chain(entry)
    check(entry, chain)  # control: the true statement passes on the fixed chain
    wrong = dataclasses.replace(entry, expected=Expected(ProofGatedAnswer, ()))
    with pytest.raises(AssertionError) as raised:
        check(wrong, chain)
    assert entry.id in str(raised.value) and entry.clause in str(raised.value)


def test_an_escaping_exception_fails_naming_the_entry():
    """(c): an exception other than the kernel's typed ones, raised by the stage or while
    building the corruption, is a failure naming the entry."""
    entry = by_id("ADR-0228/16.1-gate-unassessable")
    chain = _fixed_chain(entry)
    # The right stage, called wrongly: its TypeError must not pass as an outcome.
    stray = dataclasses.replace(
        entry, build=lambda c: Attack(open_search_run, {"search_input": None, "stray": 1})
    )
    with pytest.raises(AssertionError) as raised:
        check(stray, chain)
    message = str(raised.value)
    assert entry.id in message and entry.clause in message and "TypeError escaped" in message

    def broken(c: object) -> Attack:
        raise KeyError("no such record")

    with pytest.raises(AssertionError) as raised:
        check(dataclasses.replace(entry, build=broken), chain)
    message = str(raised.value)
    assert entry.id in message and entry.clause in message and "KeyError" in message


@share(5)
@given(chain=eligible_chains())
def test_valid_chains_are_not_refused(chain):
    """Control: without the corruption, the same stages answer normally, so every refusal
    above is caused by its entry's violation."""
    assert type(open_search_run(chain.search_input, chain.gate, chain.budget)) is (
        GeometricSearchRun
    )
    data = canonical_json(chain.budget.to_json())
    assert decode_canonical(data) == chain.budget.to_json()
    trace = practice_case(chain.frame)
    assert type(trace) is SealedPracticeTrace
    assert type(load_sealed_trace(sealed_trace_bytes(trace))) is SealedPracticeTrace


@share(5)
@given(chain=operator_chains())
def test_valid_operator_chains_are_not_refused(chain):
    """Control: the valid operator chain gives one candidate, recordable pending."""
    opened = open_search_run(chain.search_input, chain.gate, chain.budget, chain.operator_set)
    assert type(opened) is OpenedSearchRun
    entry = by_id("ADR-0228/16.11-run-without-replay-stays-pending")
    outcome = check(entry, chain)
    assert type(outcome) is GeometricSearchRun and len(outcome.candidate_attempts) == 1
    result = propose_candidate(**_context_arguments(chain, opened))
    assert type(result) is CandidateOperatorResult
    run = record_attempts(opened, CANDIDATE_OPERATOR_SET, (result.candidate_attempt,))
    assert type(run) is GeometricSearchRun


def _context_arguments(chain, opened) -> dict[str, object]:
    residual = chain.residuals[0]
    return {
        "operator_input": candidate_operator_input(
            assessment=chain.assessment,
            residual=residual,
            gate_decision=chain.gate,
            budget_decision=chain.budget,
            opened_run=opened,
        ),
        "frame": chain.frame,
        "assessment": chain.assessment,
        "residual": residual,
        "gate_decision": chain.gate,
        "budget_decision": chain.budget,
        "opened_run": opened,
        "operator_set": CANDIDATE_OPERATOR_SET,
        "policy": MISSING_ROLE_CANDIDATE_POLICY,
    }


def test_typed_exceptions_are_outcomes_and_others_escape():
    """``perform``: the kernel's typed exceptions are outcomes; any other exception escapes."""
    assert observe(perform(Attack(canonical_json, {"payload": 1.5}))) == Expected(
        CanonicalizationError, (CanonicalReason.FLOAT_NOT_ALLOWED,)
    )
    assert observe(perform(Attack(decode_canonical, {"data": b"{"}))) == Expected(
        CanonicalizationError, (CanonicalReason.INVALID_JSON,)
    )
    defect = perform(Attack(inspect_record, {"value": 1, "record_type": SearchRunRefusal}))
    assert type(defect) is RecordDefect
    with pytest.raises(ZeroDivisionError):
        perform(Attack(lambda: 1 // 0, {}))
    with pytest.raises(ValueError):
        observe(dataclasses.replace(_a_run_refusal(), reason_codes=("not_a_reason",)))


def _a_run_refusal() -> SearchRunRefusal:
    chain = build_chain(direction_unbound().frame)
    refusal = open_search_run(None, chain.gate, chain.budget)
    assert type(refusal) is SearchRunRefusal
    return refusal
