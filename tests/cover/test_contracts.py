"""The kernel's PEP 316 contracts under sampling, and the CrossHair lane itself (issue 6,
docs/contracts.md).

Every ``pre:``/``post:`` line of a contracted kernel function is evaluated here exactly as
CrossHair evaluates it, on inputs Hypothesis draws, so a condition CrossHair only searches
to its bound (or times out on) is still exercised on every run. The lane is tested on small
modules written to ``tmp_path``: it must report a planted counterexample, name what a cut-off
run did not complete, and hold on a true contract.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from practice_loop.harness import crosshair_lane
from practice_loop.harness.crosshair_lane import (
    KERNEL_CONTRACT_MODULES,
    ConditionStatus,
    DiffOutcome,
    LaneOutcome,
    diff_behavior,
    run_lane,
)
from practice_loop.kernel import (
    BlockerCode,
    BudgetConsumed,
    BudgetLimits,
    BudgetPolicyRow,
    ComputeBudgetPolicy,
    ComputeBudgetStatus,
    Direction,
    GateReason,
    ResidualKind,
    RunRefusalReason,
    SearchGateStatus,
    SourceSpan,
    budget,
    frame,
    gate,
    operators,
    proof,
    replay,
    residual,
    search_run,
)
from practice_strategies.primitives import codes, source_texts, spans, spans_in

ROOT = Path(__file__).resolve().parents[2]
_CONDITION = re.compile(r"^\s*(pre|post)\s*:\s*(.+?)\s*$")
CROSSHAIR = importlib.util.find_spec("crosshair") is not None
needs_crosshair = pytest.mark.skipif(not CROSSHAIR, reason="crosshair-tool is not installed")


def _conditions(function: Callable[..., Any]) -> tuple[list[str], list[str]]:
    pre: list[str] = []
    post: list[str] = []
    for line in (function.__doc__ or "").splitlines():
        found = _CONDITION.match(line)
        if found:
            (pre if found.group(1) == "pre" else post).append(found.group(2))
    return pre, post


def holds_contract(function: Callable[..., Any], *args: Any) -> None:
    """Call ``function`` on ``args`` where its preconditions hold and require every
    postcondition, evaluated as CrossHair does: in the function's globals, with the
    arguments by name and the result as ``__return__``."""
    pre, post = _conditions(function)
    assert post, f"{function.__qualname__} states no postcondition"
    # One namespace, as CrossHair builds it: a generator in a condition sees the arguments.
    scope = {**function.__globals__, **inspect.signature(function).bind(*args).arguments}
    for condition in pre:
        assume(eval(condition, dict(scope)))
    result = function(*args)
    for condition in post:
        assert eval(condition, {**scope, "__return__": result}), (
            f"{function.__qualname__}: `{condition}` is false for {args!r} -> {result!r}"
        )


residual_facts = st.lists(st.tuples(st.sampled_from(ResidualKind), st.booleans()), max_size=4).map(
    tuple
)
gate_reason_codes = st.one_of(st.sampled_from([r.value for r in GateReason]), codes, st.text())
charges = st.lists(
    st.tuples(st.integers(1, 2), st.integers(1, 4), st.integers(1, 3)), max_size=6
).map(tuple)
small = st.integers(0, 12)


@st.composite
def budget_tables(draw: st.DrawFn) -> ComputeBudgetPolicy:
    """Valid tables: eligible reasons, each once, allowed with a serial grant or zero."""
    reasons = draw(
        st.lists(
            st.sampled_from(sorted(gate.ELIGIBLE_REASON_BY_KIND.values(), key=lambda r: r.value)),
            unique=True,
        )
    )
    rows = []
    for reason in reasons:
        if draw(st.booleans()):
            limits = BudgetLimits(draw(st.integers(1, 9)), draw(small), draw(st.integers(1, 9)), 1)
            status = ComputeBudgetStatus.BUDGET_ALLOWED
        else:
            limits, status = BudgetLimits(0, 0, 0, 0), ComputeBudgetStatus.BUDGET_ZERO
        rows.append(BudgetPolicyRow(reason.value, status, draw(codes), limits))
    return ComputeBudgetPolicy("compute_budget.v9", tuple(rows))


@st.composite
def consumption(draw: st.DrawFn) -> tuple[BudgetConsumed, tuple[tuple[int, int, int], ...]]:
    """Charges and an accounting that balances with them, or one field off."""
    drawn = draw(
        st.lists(st.tuples(st.just(1), st.integers(1, 4), st.integers(1, 3)), max_size=5).map(tuple)
    )
    fields = {
        "candidates_considered": len(drawn),
        "max_candidates": len(drawn) + draw(st.integers(0, 2)),
        "depth_reached": max((d for _, _, d in drawn), default=0),
        "max_depth": 3,
        "steps_used": sum(s for _, s, _ in drawn),
        "max_steps": sum(s for _, s, _ in drawn) + draw(st.integers(0, 2)),
        "parallelism_used": 1 if drawn else 0,
        "max_parallelism": 1,
        "exhausted": draw(st.booleans()),
    }
    if draw(st.booleans()):
        name = draw(st.sampled_from(["candidates_considered", "depth_reached", "steps_used"]))
        fields[name] = max(0, fields[name] - 1)
    return BudgetConsumed(**fields), drawn


@st.composite
def evidence(draw: st.DrawFn) -> tuple[tuple[SourceSpan, ...], str]:
    source = draw(source_texts.filter(bool))
    inside = st.lists(spans_in(source), max_size=4)
    found = draw(st.one_of(inside, st.lists(st.one_of(spans_in(source), spans()), max_size=4)))
    return tuple(found), source


@st.composite
def replay_facts(draw: st.DrawFn) -> tuple[Any, ...]:
    """The facts of a replay as a valid proof record gives them (the preconditions)."""
    names = st.sampled_from(["units_agree", "result_non_negative", "unit_mismatch"])
    blockers = tuple(draw(st.lists(names, max_size=2)))
    if not draw(st.booleans()):
        return draw(st.booleans()), blockers, False, False, False, ()
    failed = tuple(draw(st.lists(names, max_size=2)))
    return draw(st.booleans()), blockers, True, draw(st.booleans()), not failed, failed


# Every contracted kernel function and the inputs its contract is sampled on.
SAMPLED: dict[str, tuple[Callable[..., Any], st.SearchStrategy[tuple[Any, ...]]]] = {
    "gate.search_gate_reason": (
        gate.search_gate_reason,
        st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans(), residual_facts),
    ),
    "budget.compute_budget_v1": (
        budget.compute_budget_v1,
        st.tuples(st.sampled_from(SearchGateStatus), gate_reason_codes),
    ),
    "search_run.refusal_disposition": (
        search_run.refusal_disposition,
        st.tuples(st.sampled_from(RunRefusalReason)),
    ),
    "search_run.admission_failure": (
        search_run.admission_failure,
        st.tuples(st.sampled_from(SearchGateStatus), st.sampled_from(ComputeBudgetStatus),
                  small, small, st.integers(0, 2)),
    ),
    "search_run.admit_within_ceiling": (
        search_run.admit_within_ceiling,
        st.tuples(charges, st.tuples(small, st.integers(0, 3), small)),
    ),
    "search_run.run_disposition_for": (
        search_run.run_disposition_for,
        st.tuples(small, st.sampled_from([None, *sorted(search_run.BUDGET_EXHAUSTION_CODES,
                                                         key=lambda c: c.value)]),
                  st.booleans()),
    ),
    "search_run.accounting_balances": (search_run.accounting_balances, consumption()),
    "operators.operator_admission_failure": (
        operators.operator_admission_failure,
        st.tuples(st.sampled_from(SearchGateStatus),
                  st.sampled_from(["eligible_missing_role", "eligible_target_unbound"]),
                  st.sampled_from(ComputeBudgetStatus),
                  st.sampled_from(["budget_allowed_missing_role", "budget_allowed_other"])),
    ),
    "operators.attempt_charge_failure": (
        operators.attempt_charge_failure,
        st.tuples(small, st.tuples(small, small, small, st.integers(0, 2)),
                  st.tuples(st.just(1), st.integers(1, 3)),
                  st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 2))),
    ),
    "replay.replay_disposition": (replay.replay_disposition, replay_facts()),
    "proof.proof_obligations": (
        proof.proof_obligations,
        st.tuples(st.integers(0, 2**53 - 1), st.integers(0, 2**53 - 1),
                  st.sampled_from(Direction), st.booleans()),
    ),
    "residual.residual_kind_for": (
        residual.residual_kind_for,
        st.tuples(st.sampled_from(BlockerCode)),
    ),
    "frame.evidence_defect": (frame.evidence_defect, evidence()),
}  # fmt: skip


def _contracted_functions() -> set[str]:
    found = set()
    for module in KERNEL_CONTRACT_MODULES:
        parsed = crosshair_lane._read_module(module, ())
        short = module.rsplit(".", 1)[1]
        found |= {f"{short}.{condition.function}" for condition in parsed.conditions}
    return found


def test_every_contract_is_also_sampled():
    """Issue 6: a contract CrossHair cannot finish is still exercised, so every contracted
    kernel function has its sampled check here (``initialization_failure`` takes whole
    records; its condition is checked on real chains by test_search_run.py)."""
    assert _contracted_functions() - {"search_run.initialization_failure"} == set(SAMPLED)


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_contract_holds_on_sampled_inputs(name):
    """Issue 6 (docs/contracts.md): the function's own pre/post conditions, as CrossHair
    reads them, hold on Hypothesis's inputs: ADR-0226 §7B (gate), ADR-0227 §8 (budget),
    ADR-0228 §9, §16 (run), ADR-0231 §7.3 (operator), ADR-0226 §7E (replay, proof)."""
    function, arguments = SAMPLED[name]

    # The arguments are whole chains, slow to draw; the conditions' `assume` rejects few.
    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(arguments)
    def check(args: tuple[Any, ...]) -> None:
        holds_contract(function, *args)

    check()


_ROLE, _UNCLASSIFIED = ResidualKind.MISSING_ROLE, ResidualKind.UNCLASSIFIED
# The gate's contract on the edges of the one context search_gate.v1 admits (ADR-0226 §7B):
# (id, residual facts, whether the gate allows). Drawn at random, a valid refused projected
# context with exactly these residuals is rare; listed, each edge is checked on every run.
GATE_CONTRACT_EDGES = [
    ("admitted", ((_ROLE, True),), True),
    ("unclassified-with-evidence", ((_UNCLASSIFIED, True),), False),
    ("searchable-without-evidence", ((_ROLE, False),), False),
    ("two-searchable", ((_ROLE, True), (_ROLE, True)), False),
    ("unclassified-then-searchable", ((_UNCLASSIFIED, True), (_ROLE, True)), False),
    ("none", (), False),
]


@pytest.mark.parametrize(
    ("residuals", "allowed"),
    [pytest.param(residuals, allowed, id=name) for name, residuals, allowed in GATE_CONTRACT_EDGES],
)
def test_the_gate_contract_holds_on_the_edges_of_the_admitted_context(residuals, allowed):
    holds_contract(gate.search_gate_reason, True, True, False, True, residuals)
    reason = gate.search_gate_reason(True, True, False, True, residuals)
    assert (gate.GATE_STATUS_BY_REASON[reason] is SearchGateStatus.ELIGIBLE) is allowed


@given(budget_tables(), st.sampled_from(SearchGateStatus), gate_reason_codes)
def test_any_valid_table_keeps_the_budget_contract(table, status, reason_code):
    """ADR-0227 §8 for every valid table, not only v1 (CrossHair cannot build one): a denied
    gate is blocked with nothing, only an allowed verdict has resources, and an allowed one
    is serial with a candidate and a step."""
    verdict = budget.budget_verdict(status, reason_code, table)
    if status is not SearchGateStatus.ELIGIBLE:
        assert budget._blocked_with_nothing(verdict)
    assert verdict.status is ComputeBudgetStatus.BUDGET_ALLOWED or verdict.limits.all_zero()
    if verdict.status is ComputeBudgetStatus.BUDGET_ALLOWED:
        assert budget._serial(verdict)
        assert table.row_for(reason_code) is not None


@pytest.mark.skipif(
    importlib.util.find_spec("hypothesis_crosshair_provider") is None,
    reason="hypothesis-crosshair is not installed",
)
@pytest.mark.parametrize(
    "name",
    ["gate.search_gate_reason", "search_run.run_disposition_for", "replay.replay_disposition"],
)
def test_contracts_under_the_crosshair_backend(name):
    """Issue 6: the ``crosshair`` profile (tests/conftest.py) runs the same properties on
    symbolic draws through hypothesis-crosshair."""
    function, arguments = SAMPLED[name]

    @settings(settings.get_profile("crosshair"), max_examples=10)
    @given(arguments)
    def check(args: tuple[Any, ...]) -> None:
        holds_contract(function, *args)

    check()


# --------------------------------------------------------------------------------------------
# The lane on small modules of its own

BROKEN = '''
import enum


class Gate(enum.Enum):
    OPEN = "open"
    SHUT = "shut"


def grant(gate: Gate, asked: int) -> int:
    """
    pre: asked >= 0
    post: __return__ >= 0
    post: gate is Gate.OPEN or __return__ == 0
    """
    if gate is Gate.OPEN:
        return asked
    return asked - 1 if asked > 3 else 0
'''

SOUND = '''
def grant(asked: int) -> int:
    """
    pre: asked >= 0
    post: 0 <= __return__ <= asked
    """
    return asked // 2
'''

SLOW = '''
def spread(values: list[int]) -> int:
    """
    post: __return__ >= 0
    """
    return sum(value * value for value in values)
'''

VACUOUS = '''
def grant(asked: int) -> int:
    """
    pre: asked > 0 and asked < 0
    post: __return__ == asked
    """
    return asked
'''

MALFORMED = '''
def grant(asked: int) -> int:
    """
    post: __return__ >=
    """
    return asked
'''


def _module(tmp_path: Path, name: str, source: str) -> tuple[str, ...]:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
    return (name,)


@needs_crosshair
def test_lane_reports_a_planted_counterexample(tmp_path):
    """Issue 6: a contract broken on purpose fails the lane with a readable counterexample
    naming the function, the condition and the input."""
    result = run_lane(60, 5, modules=_module(tmp_path, "planted", BROKEN), search_path=[tmp_path])
    assert result.outcome is LaneOutcome.COUNTEREXAMPLE and not result.passed
    assert result.outcome.exit_code == 1
    (line,) = result.counterexamples
    assert "planted.grant" in line and "`gate is Gate.OPEN or __return__ == 0`" in line
    assert "when calling grant(Gate.SHUT, " in line
    statuses = {report.condition: report.status for report in result.conditions}
    assert statuses["__return__ >= 0"] is ConditionStatus.CONFIRMED


@needs_crosshair
def test_lane_holds_on_a_sound_contract(tmp_path):
    """Issue 6: a true contract passes, confirmed over all paths."""
    result = run_lane(60, 5, modules=_module(tmp_path, "sound", SOUND), search_path=[tmp_path])
    assert result.outcome is LaneOutcome.HELD and result.passed and not result.bound_hit
    assert [report.status for report in result.conditions] == [ConditionStatus.CONFIRMED]


@needs_crosshair
def test_lane_cut_off_by_its_total_bound_is_incomplete(tmp_path):
    """Issue 6: a run the total bound stops is never a pass; it names what it left out."""
    result = run_lane(1.5, 60, modules=_module(tmp_path, "slow", SLOW), search_path=[tmp_path])
    assert result.outcome is LaneOutcome.INCOMPLETE and result.bound_hit and not result.passed
    assert result.outcome.exit_code == 3
    (line,) = result.not_completed
    assert "slow.spread" in line and "`__return__ >= 0`" in line


@needs_crosshair
def test_lane_with_a_vacuous_condition_is_incomplete(tmp_path):
    """Issue 16: a condition no input could reach was checked on nothing; the lane names it
    and never reports a pass."""
    modules = _module(tmp_path, "vacuous", VACUOUS)
    result = run_lane(60, 2, modules=modules, search_path=[tmp_path])
    assert result.outcome is LaneOutcome.INCOMPLETE and not result.passed
    assert result.outcome.exit_code == 3
    assert ConditionStatus.VACUOUS in {report.status for report in result.conditions}
    assert any("vacuous.grant" in line and "vacuous" in line for line in result.not_completed)


@needs_crosshair
def test_lane_fails_on_a_malformed_condition(tmp_path):
    """Issue 6: a condition that does not parse is a failure, not a silent skip."""
    modules = _module(tmp_path, "malformed", MALFORMED)
    result = run_lane(60, 5, modules=modules, search_path=[tmp_path])
    assert result.outcome is LaneOutcome.COUNTEREXAMPLE
    assert [report.status for report in result.conditions] == [ConditionStatus.MALFORMED]


def test_lane_result_refuses_an_inconsistent_verdict():
    """Issue 6: a result cannot claim a pass with parts left out or with counterexamples."""
    with pytest.raises(ValueError):
        crosshair_lane.LaneResult(LaneOutcome.HELD, (), (), ("m.f: not completed",), True, "")
    with pytest.raises(ValueError):
        crosshair_lane.LaneResult(LaneOutcome.HELD, (), ("m.f: false",), (), False, "")
    vacuous = crosshair_lane.ConditionReport(
        "m", "m.f", "m.py", 3, "x > 0", ConditionStatus.VACUOUS, ""
    )
    with pytest.raises(ValueError, match="checked on some input"):
        crosshair_lane.LaneResult(LaneOutcome.HELD, (vacuous,), (), (), False, "")


OLD_TABLE = """
def grant(kind: str) -> int:
    return {"role": 5, "relation": 5, "proposal": 3}.get(kind, 0)
"""

NEW_TABLE = """
def grant(kind: str) -> int:
    return {"role": 5, "relation": 5, "proposal": 5}.get(kind, 0)
"""


@needs_crosshair
def test_policy_diff_shows_the_differing_input(tmp_path):
    """Issue 6: diffbehavior between two versions of a table lookup names the one input they
    treat differently, with both answers (the kernel's own example, compute_budget.v1 against
    practice_strategies.policy_candidates, is in docs/contracts.md)."""
    _module(tmp_path, "table_v1", OLD_TABLE)
    _module(tmp_path, "table_v2", NEW_TABLE)
    result = diff_behavior("table_v1.grant", "table_v2.grant", 5, search_path=[tmp_path])
    assert result.outcome is DiffOutcome.DIFFERENT and result.outcome.exit_code == 1
    (difference,) = result.differences
    assert "kind='proposal'" in difference
    assert "returns 3" in difference and "returns 5" in difference


@needs_crosshair
def test_policy_diff_finds_no_difference_between_a_function_and_itself(tmp_path):
    """Issue 6: the same function twice is exit 0, no difference within the bound."""
    _module(tmp_path, "table_v1", OLD_TABLE)
    result = diff_behavior("table_v1.grant", "table_v1.grant", 2, search_path=[tmp_path])
    assert result.outcome is DiffOutcome.NO_DIFFERENCE_FOUND and not result.differences


@pytest.mark.parametrize(
    "arguments",
    [
        ["contracts", "--seconds", "0"],
        ["contracts", "--per-condition-seconds", "x"],
        ["policy-diff", "not_dotted", "practice_loop.kernel.budget.compute_budget_v1"],
    ],
)
def test_cli_usage_errors_exit_2(arguments):
    """Issue 6: a usage error is exit status 2, never a verdict."""
    done = subprocess.run(
        [sys.executable, "-m", "practice_loop", *arguments],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
