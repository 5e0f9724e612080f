"""``practice-loop prove-policy FILE``: prove a candidate budget table keeps every invariant
the ADRs demand, and show how its decisions differ from the version in force.

The invariants are the same for every version (``INVARIANTS``): the registered versions are
proved by ``tests/cover/test_prove_policy.py`` on every run, a candidate by this command.
Table invariants read every cell of the table; property invariants run the kernel's own
decision, run and operator functions under the candidate on Hypothesis-generated gates
(``practice_strategies.chains``, derandomized so that a report reproduces). Then the
differences from ``compute_budget.v1``, row by row, on generated gates and, where CrossHair is
installed, by ``crosshair diffbehavior``; and the golden vectors of the version in force
must still reproduce. Exit 0 only when every invariant holds and no vector moved
(docs/proving-policy-versions.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..kernel import (
    COMPUTE_BUDGET_V1,
    BudgetCharge,
    ComputeBudgetDecision,
    ComputeBudgetPolicy,
    ComputeBudgetStatus,
    RecordError,
    SearchGateDecision,
    SearchGateStatus,
    decide_compute_budget,
    operator_set_id,
)
from ..kernel.budget import BUDGET_POLICIES
from ..kernel.operators import MISSING_ROLE_CANDIDATE_POLICY, attempt_charge_failure
from ..kernel.search_run import admission_failure, admit_within_ceiling
from .policy_file import (
    ANY_OTHER_REASON,
    BUDGET_POLICY_KIND,
    GATE_IN_FORCE,
    GATE_POLICY_KIND,
    OPERATORS_IN_FORCE,
    OPERATORS_POLICY_KIND,
    VERSION_IN_FORCE,
    BudgetTable,
    GateTable,
    OperatorTable,
    PolicyFileError,
    TableRow,
    kernel_gate_policy,
    kernel_operator_set,
    kernel_policy,
    load_policy_file,
    required_row_keys,
    table_of,
)
from .policy_invariants import (
    Difference,
    Invariant,
    InvariantResult,
    InvariantStatus,
    generated_chains,
    run_invariants,
)
from .report_context import context_line, run_context

DEFAULT_EXAMPLES = 200
DEFAULT_CROSSHAIR_SECONDS = 10.0
DEFAULT_OUT = Path("policy-report")


# --------------------------------------------------------------------------------------------
# Table invariants: every cell of the finite table.

_ZERO = (0, 0, 0, 0)


def _named_eligible(row: TableRow) -> bool:
    return row.gate_status is SearchGateStatus.ELIGIBLE and row.gate_reason_code != ANY_OTHER_REASON


def _denied_gate_blocked(table: BudgetTable, _: object, __: int) -> list[str]:
    return [
        f"{row.describe()} gives {row.status.value} {row.limits}, not BUDGET_BLOCKED with every"
        " limit 0"
        for row in table.rows
        if row.gate_status is not SearchGateStatus.ELIGIBLE
        and (row.status is not ComputeBudgetStatus.BUDGET_BLOCKED or row.limits != _ZERO)
    ]


def _unknown_reason_unassessable(table: BudgetTable, _: object, __: int) -> list[str]:
    row = table.row(SearchGateStatus.ELIGIBLE, ANY_OTHER_REASON)
    if row.status is ComputeBudgetStatus.BUDGET_UNASSESSABLE and row.limits == _ZERO:
        return []
    return [f"{row.describe()} gives {row.status.value} {row.limits}"]


def _eligible_allowed_or_zero(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for row in filter(_named_eligible, table.rows):
        candidates, _depth, steps, _parallelism = row.limits
        if row.status is ComputeBudgetStatus.BUDGET_ZERO and row.limits != _ZERO:
            found.append(f"{row.describe()} is BUDGET_ZERO with limits {row.limits}")
        elif row.status is ComputeBudgetStatus.BUDGET_ALLOWED and min(candidates, steps) < 1:
            found.append(f"{row.describe()} is BUDGET_ALLOWED without a candidate and a step")
        elif row.status not in (
            ComputeBudgetStatus.BUDGET_ALLOWED,
            ComputeBudgetStatus.BUDGET_ZERO,
        ):
            found.append(f"{row.describe()} is {row.status.value}")
    return found


def _serial_only(table: BudgetTable, _: object, __: int) -> list[str]:
    return [
        f"{row.describe()} grants max_parallelism {row.limits[3]}"
        for row in table.rows
        if row.limits[3] != (1 if row.status is ComputeBudgetStatus.BUDGET_ALLOWED else 0)
    ]


def _reason_codes_match(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for row in table.rows:
        if not _named_eligible(row):
            # The fixed rows keep the reason codes the kernel gives them.
            expected_ok = row.reason_code == VERSION_IN_FORCE.row(*row.key).reason_code
        elif row.status is ComputeBudgetStatus.BUDGET_ALLOWED:
            expected_ok = row.reason_code.startswith("budget_allowed_")
        else:
            expected_ok = row.reason_code.startswith("budget_zero_")
        if not expected_ok:
            found.append(f"{row.describe()} ({row.status.value}) names {row.reason_code!r}")
    return found


def _version_is_new(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for registered_version, policy in BUDGET_POLICIES.items():
        if table.version == registered_version and table.rows != table_of(policy).rows:
            found.append(
                f"{table.version} is already the registered version with another table: a"
                " changed table needs a new version"
            )
    return found


def _kernel_accepts(table: BudgetTable, _: object, __: int) -> list[str]:
    built = kernel_policy(table)
    return [f"the kernel refuses the table: {built}"] if isinstance(built, RecordError) else []


# --------------------------------------------------------------------------------------------
# Property invariants: the kernel's own functions under the candidate, on generated gates.


def _gates(examples: int) -> list[SearchGateDecision]:
    return [chain.gate for chain in generated_chains(examples)]


def _decide(gate: SearchGateDecision, policy: ComputeBudgetPolicy) -> ComputeBudgetDecision:
    return decide_compute_budget(gate, policy, registered={policy.version: policy})


def _granted(decision: ComputeBudgetDecision) -> tuple[object, ...]:
    limits = tuple(
        getattr(decision, name)
        for name in ("max_candidates", "max_depth", "max_steps", "max_parallelism")
    )
    return decision.status, decision.reason_code, limits


def _limits_from_status_and_reason(
    table: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    assert policy is not None
    found = []
    for gate in _gates(examples):
        row = table.row(gate.status, gate.reason_code)
        if not _named_eligible(row):
            continue  # the kernel fixes the other rows; the table invariants judge them
        decided = _granted(_decide(gate, policy))
        if decided != (row.status, row.reason_code, row.limits):
            found.append(
                f"gate {gate.decision_id[:12]} ({gate.status.value}/{gate.reason_code}) is"
                f" granted {_granted_text(decided)}, not its row {row.describe()}"
            )
    return found[:5]


def _identities_follow_version(
    table: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    assert policy is not None
    if table.rows == VERSION_IN_FORCE.rows and table.version == VERSION_IN_FORCE.version:
        return []
    found = []
    if policy.policy_id == COMPUTE_BUDGET_V1.policy_id:
        found.append("the table's policy_id equals compute_budget.v1's")
    for gate in _gates(examples):
        if _decide(gate, policy).budget_id == decide_compute_budget(gate).budget_id:
            found.append(f"gate {gate.decision_id[:12]}: the same budget_id under both versions")
            break
    return found


def _explanation_stability(
    _: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    from practice_strategies import resealed

    assert policy is not None
    found = []
    for gate in _gates(examples):
        reworded = resealed(gate, explanation=gate.explanation + " (reworded)")
        before, after = _decide(gate, policy), _decide(reworded, policy)
        if before.budget_id != after.budget_id or _granted(before) != _granted(after):
            found.append(
                f"gate {gate.decision_id[:12]}: rewording its explanation moved the budget"
            )
    return found[:5]


def _span_order_sensitivity(
    _: BudgetTable, policy: ComputeBudgetPolicy | None, examples: int
) -> list[str]:
    from practice_strategies import resealed

    assert policy is not None
    found = []
    for gate in _gates(examples):
        spans = gate.evidence_spans
        if tuple(reversed(spans)) == spans:
            continue  # a palindrome of spans has no other order to try this way
        reordered = resealed(gate, evidence_spans=tuple(reversed(spans)))
        if _decide(gate, policy).budget_id == _decide(reordered, policy).budget_id:
            found.append(f"gate {gate.decision_id[:12]}: reordered spans kept the budget_id")
    return found[:5]


def _run_admits_exactly_allowed(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    for row in table.rows:
        candidates, _depth, steps, parallelism = row.limits
        refusal = admission_failure(row.gate_status, row.status, candidates, steps, parallelism)
        allowed = (
            row.gate_status is SearchGateStatus.ELIGIBLE
            and row.status is ComputeBudgetStatus.BUDGET_ALLOWED
        )
        if (refusal is None) != allowed:
            shown = "opens" if refusal is None else f"is refused ({refusal.value})"
            found.append(f"{row.describe()} ({row.status.value}): a run {shown}")
    return found


def _ceiling_never_exceeded(table: BudgetTable, _: object, __: int) -> list[str]:
    found = []
    charges = tuple((1, steps, depth) for steps in (1, 2, 3) for depth in (1, 2))
    for row in table.rows:
        if row.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
            continue
        candidates, depth, steps, _ = row.limits
        ceiling = (candidates, depth, steps)
        for start in range(len(charges)):
            sequence = charges[start:] + charges[:start]
            kept, _stop = admit_within_ceiling(sequence, ceiling)
            admitted = sequence[:kept]
            if (
                sum(charge[0] for charge in admitted) > candidates
                or sum(charge[1] for charge in admitted) > steps
                or any(charge[2] > depth for charge in admitted)
            ):
                found.append(f"{row.describe()}: a run admitted {admitted} over {ceiling}")
    return found


def _operator_charge_within_grant(table: BudgetTable, _: object, __: int) -> list[str]:
    policy = MISSING_ROLE_CANDIDATE_POLICY
    charge: BudgetCharge = policy.budget_charge
    policy_limits = (policy.depth, policy.max_attempts_per_run, policy.max_parallelism)
    found = []
    for row in table.rows:
        if row.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
            continue
        for attempt_index in range(row.limits[0] + 1):
            charged = (charge.candidates, charge.steps)
            if attempt_charge_failure(attempt_index, row.limits, charged, policy_limits) is None:
                used = attempt_index + 1
                if (
                    used * charge.candidates > row.limits[0]
                    or used * charge.steps > row.limits[2]
                    or policy.depth > row.limits[1]
                ):
                    found.append(f"{row.describe()}: attempt {attempt_index} admitted beyond it")
    return found


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "denied_gate_blocked",
        "ADR-0227 §8, §3",
        "every non-ELIGIBLE gate gets BUDGET_BLOCKED with every limit 0",
        _denied_gate_blocked,
    ),
    Invariant(
        "unknown_reason_unassessable",
        "ADR-0227 §8",
        "an eligible reason without a row gets BUDGET_UNASSESSABLE with every limit 0",
        _unknown_reason_unassessable,
    ),
    Invariant(
        "eligible_rows_allowed_or_zero",
        "ADR-0227 §5, §8",
        "a named eligible row is BUDGET_ALLOWED with a candidate and a step, or BUDGET_ZERO with"
        " nothing",
        _eligible_allowed_or_zero,
    ),
    Invariant(
        "serial_only",
        "ADR-0227 §8 (no concurrency bounds expansion)",
        "an allowed row grants max_parallelism exactly 1, every other row 0",
        _serial_only,
    ),
    Invariant(
        "reason_codes_match_status",
        "ADR-0227 §5",
        "each row's reason code belongs to its status",
        _reason_codes_match,
    ),
    Invariant(
        "changed_table_new_version",
        "ADR-0227 §6, ADR-0231 §10",
        "a table that differs from a registered version carries a version of its own",
        _version_is_new,
    ),
    Invariant(
        "kernel_accepts_table",
        "docs/adr/0003 (records validate on construction)",
        "the kernel builds the table's eligible rows as a ComputeBudgetPolicy",
        _kernel_accepts,
    ),
    Invariant(
        "limits_from_status_and_reason",
        "ADR-0227 §8 (no adaptive scaling)",
        "on generated gates, the decision is exactly the row of the gate's status and reason",
        _limits_from_status_and_reason,
        needs_kernel_policy=True,
    ),
    Invariant(
        "identities_follow_version",
        "ADR-0227 §6, §7; ADR-0231 §10",
        "a changed table changes policy_id and every budget_id decided under it",
        _identities_follow_version,
        needs_kernel_policy=True,
    ),
    Invariant(
        "explanation_stability",
        "ADR-0227 §7 (explanation excluded)",
        "rewording a gate's explanation changes neither the grant nor the budget_id",
        _explanation_stability,
        needs_kernel_policy=True,
    ),
    Invariant(
        "span_order_sensitivity",
        "ADR-0227 §7, ADR-0228 §6",
        "reordering a gate's evidence spans changes the budget_id",
        _span_order_sensitivity,
        needs_kernel_policy=True,
    ),
    Invariant(
        "run_admits_exactly_allowed",
        "ADR-0228 §9, §11",
        "a search run opens on exactly the rows that allow a budget",
        _run_admits_exactly_allowed,
    ),
    Invariant(
        "ceiling_never_exceeded",
        "ADR-0228 §9",
        "a run admits attempts only while their whole charge fits each allowed row",
        _ceiling_never_exceeded,
    ),
    Invariant(
        "operator_charge_within_grant",
        "ADR-0231 §7.3.17-20",
        "the operator admits an attempt only when its fixed charge fits the grant",
        _operator_charge_within_grant,
    ),
)


def check_invariants(table: BudgetTable, examples: int = DEFAULT_EXAMPLES) -> list[InvariantResult]:
    return run_invariants(INVARIANTS, table, kernel_policy(table), examples)


# --------------------------------------------------------------------------------------------
# Differences from the version in force.


def _shown(row: TableRow) -> str:
    return _granted_text((row.status, row.reason_code, row.limits))


_LIMIT_NAMES = ("candidates", "depth", "steps", "parallelism")


def table_differences(table: BudgetTable) -> list[Difference]:
    differences = []
    for gate_status, gate_reason in required_row_keys():
        old = VERSION_IN_FORCE.row(gate_status, gate_reason)
        new = table.row(gate_status, gate_reason)
        if (old.status, old.reason_code, old.limits) != (new.status, new.reason_code, new.limits):
            differences.append(Difference("table", old.describe(), _shown(old), _shown(new)))
    return differences


def generated_differences(policy: ComputeBudgetPolicy, examples: int) -> list[Difference]:
    differences: dict[tuple[str, str], Difference] = {}
    for gate in _gates(examples):
        old, new = _granted(decide_compute_budget(gate)), _granted(_decide(gate, policy))
        key = (gate.status.value, gate.reason_code)
        if old != new and key not in differences:
            differences[key] = Difference(
                "generated gate",
                f"{gate.status.value}/{gate.reason_code} (e.g. gate {gate.decision_id[:12]})",
                _granted_text(old),
                _granted_text(new),
            )
    return list(differences.values())


def _granted_text(granted: tuple[Any, ...]) -> str:
    status, reason, limits = granted
    shown = ", ".join(f"{name} {value}" for name, value in zip(_LIMIT_NAMES, limits, strict=True))
    return f"{status.value} {reason} ({shown})"


_CANDIDATE_MODULE = '''"""Written by practice-loop prove-policy for crosshair diffbehavior."""
from pathlib import Path

from practice_loop.kernel import SearchGateStatus
from practice_loop.kernel.budget import BudgetVerdict, budget_verdict
from practice_loop.harness.policy_file import kernel_policy, load_budget_table

_POLICY = kernel_policy(load_budget_table(Path({path!r})))


def compute_budget_candidate(gate_status: SearchGateStatus, gate_reason_code: str) -> BudgetVerdict:
    return budget_verdict(gate_status, gate_reason_code, _POLICY)
'''


def crosshair_differences(source: Path, seconds: float) -> tuple[list[Difference], str]:
    """``crosshair diffbehavior`` of ``compute_budget_v1`` against the candidate table; the
    differences and a line saying how the comparison went."""
    from .crosshair_lane import DiffOutcome, diff_behavior

    with tempfile.TemporaryDirectory(prefix="prove-policy-") as folder:
        module = Path(folder) / "prove_policy_candidate.py"
        module.write_text(_CANDIDATE_MODULE.format(path=str(source.resolve())), "utf-8")
        result = diff_behavior(
            "practice_loop.kernel.budget.compute_budget_v1",
            "prove_policy_candidate.compute_budget_candidate",
            seconds,
            search_path=(Path(folder),),
        )
    found = [Difference("crosshair", text, "", "") for text in result.differences]
    if result.outcome is DiffOutcome.FAILED:
        return found, f"failed: {result.output.strip()[-300:]}"
    return found, f"{result.outcome.value} within {seconds:g} s"


# --------------------------------------------------------------------------------------------
# The whole proof, its reports and the command.


@dataclasses.dataclass(frozen=True, slots=True)
class Proof:
    source: str
    version: str | None
    policy_id: str | None
    refusal: PolicyFileError | None
    invariants: tuple[InvariantResult, ...]
    differences: tuple[Difference, ...]
    crosshair: str
    vectors_checked: bool
    vectors_moved: tuple[str, ...]
    kind: str = BUDGET_POLICY_KIND
    compared_with: str = VERSION_IN_FORCE.version

    @property
    def proven(self) -> bool:
        return (
            self.refusal is None
            and all(result.status is InvariantStatus.HELD for result in self.invariants)
            and self.vectors_checked
            and not self.vectors_moved
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "policy": self.kind,
            "version": self.version,
            "compared_with": self.compared_with,
            "policy_id": self.policy_id,
            "proven": self.proven,
            "refusal": None
            if self.refusal is None
            else {
                "reason": self.refusal.reason.value,
                "where": self.refusal.where,
                "detail": self.refusal.detail,
            },
            "invariants": [result.to_json() for result in self.invariants],
            "differences": [difference.to_json() for difference in self.differences],
            "crosshair": self.crosshair,
            "golden_vectors": {"checked": self.vectors_checked, "moved": list(self.vectors_moved)},
        }


def _vectors_moved() -> tuple[str, ...]:
    from .vectors import check_vectors

    return tuple(drift.describe() for drift in check_vectors())


def prove(
    source: Path,
    *,
    examples: int = DEFAULT_EXAMPLES,
    crosshair_seconds: float = DEFAULT_CROSSHAIR_SECONDS,
    check_golden_vectors: bool = True,
) -> Proof:
    """Prove the candidate policy in ``source`` (any kind); ``OSError`` when it cannot be
    read."""
    try:
        loaded = load_policy_file(source)
    except PolicyFileError as refusal:
        return Proof(str(source), None, None, refusal, (), (), "not run", False, ())
    if not isinstance(loaded, BudgetTable):
        return _prove_other_kind(loaded, examples, check_golden_vectors)
    table = loaded
    results = tuple(check_invariants(table, examples))
    built = kernel_policy(table)
    policy = None if isinstance(built, RecordError) else built
    differences = table_differences(table)
    crosshair = "not run: the kernel refuses the table"
    if policy is not None:
        differences += generated_differences(policy, examples)
        if crosshair_seconds > 0:
            found, crosshair = crosshair_differences(source, crosshair_seconds)
            differences += found
        else:
            crosshair = "not run: --crosshair-seconds 0"
    moved = _vectors_moved() if check_golden_vectors else ()
    return Proof(
        str(source),
        table.version,
        None if policy is None else policy.policy_id,
        None,
        results,
        tuple(differences),
        crosshair,
        check_golden_vectors,
        moved,
    )


def _prove_other_kind(table: Any, examples: int, check_golden_vectors: bool) -> Proof:
    """A ``search_gate`` or ``candidate_operators`` file: its kind's invariants and its
    differences from the version in force, row by row and on generated inputs."""
    if isinstance(table, GateTable):
        from . import prove_gate

        built: Any = kernel_gate_policy(table)
        invariants = prove_gate.GATE_INVARIANTS
        kind, compared_with = GATE_POLICY_KIND, GATE_IN_FORCE.version
        differences = prove_gate.gate_table_differences(table)
        if not isinstance(built, RecordError):
            differences += prove_gate.gate_generated_differences(built, examples)
        policy_id = None if isinstance(built, RecordError) else built.policy_id
    elif isinstance(table, OperatorTable):
        from . import prove_operators

        built = kernel_operator_set(table)
        invariants = prove_operators.OPERATOR_INVARIANTS
        kind, compared_with = OPERATORS_POLICY_KIND, OPERATORS_IN_FORCE.version
        differences = prove_operators.operator_table_differences(table)
        policy_id = None if isinstance(built, RecordError) else operator_set_id(built)
    else:
        raise TypeError(f"not a policy table: {type(table).__name__}")
    results = tuple(run_invariants(invariants, table, built, examples))
    return Proof(
        table.source,
        table.version,
        policy_id,
        None,
        results,
        tuple(differences),
        "not run: CrossHair compares budget tables only",
        check_golden_vectors,
        _vectors_moved() if check_golden_vectors else (),
        kind,
        compared_with,
    )


def render_markdown(proof: Proof, context: dict[str, str]) -> str:
    verdict = "PROVEN" if proof.proven else "NOT PROVEN"
    lines = [f"# prove-policy: {proof.source}", "", f"**{verdict}**", ""]
    lines += [f"Made with {context_line(context)}.", ""]
    if proof.refusal is not None:
        lines += [f"The file is refused: `{proof.refusal}`.", ""]
        return "\n".join(lines)
    lines += [f"- policy: `{proof.kind}`", f"- version: `{proof.version}`"]
    lines += [f"- policy_id: `{proof.policy_id}`", ""]
    lines += [
        "## Invariants",
        "",
        "| invariant | clause | status | violations |",
        "|---|---|---|---|",
    ]
    for result in proof.invariants:
        shown = "; ".join(result.violations).replace("|", "\\|")
        lines.append(f"| `{result.name}` | {result.clause} | {result.status.value} | {shown} |")
    lines += ["", f"## Differences from {proof.compared_with}", ""]
    if proof.differences:
        lines += [
            f"| found by | decision | {proof.compared_with} | candidate |",
            "|---|---|---|---|",
        ]
        for difference in proof.differences:
            lines.append(
                f"| {difference.found_by} | {difference.gate} | {difference.in_force} |"
                f" {difference.candidate} |"
            )
    else:
        lines.append("None.")
    lines += ["", f"CrossHair diffbehavior: {proof.crosshair}", "", "## Golden vectors", ""]
    if not proof.vectors_checked:
        lines.append("Not checked.")
    elif proof.vectors_moved:
        lines += [f"- {moved}" for moved in proof.vectors_moved]
    else:
        lines.append("Every golden vector of the version in force reproduces unchanged.")
    return "\n".join(lines) + "\n"


def _print_summary(proof: Proof) -> None:
    if proof.refusal is not None:
        print(f"refused: {proof.refusal}")
    for result in proof.invariants:
        print(f"{result.status.value:8} {result.name} ({result.clause})")
        for violation in result.violations:
            print(f"         - {violation}")
    for difference in proof.differences:
        if difference.found_by == "crosshair":
            print(f"differs (crosshair): {difference.gate}")
        else:
            print(
                f"differs ({difference.found_by}) {difference.gate}: {difference.in_force}"
                f" -> {difference.candidate}"
            )
    if proof.refusal is None:
        print(f"crosshair diffbehavior: {proof.crosshair}")
        print(f"golden vectors moved: {len(proof.vectors_moved)}")
    print("PROVEN" if proof.proven else "NOT PROVEN")


def add_subcommand(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "prove-policy",
        help="prove a candidate policy file (compute_budget, search_gate or candidate_operators)"
        " and show how it differs from the version in force",
        description="Load a policy file of any kind, check every invariant of its kind (each "
        "naming its ADR clause) on the whole table and on generated inputs through the real "
        "kernel, compare its decisions with the version in force (budget tables also through "
        "CrossHair), and write proof.md and "
        "proof.json (docs/proving-policy-versions.md). Exit status: 0 proven; 1 not proven "
        "(each broken invariant is named) or the file is refused with its reason; 2 a usage "
        "error (the file cannot be read, or the test extra is not installed).",
    )
    parser.add_argument("file", type=Path, help="a policy file (docs/proving-policy-versions.md)")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help=f"the report folder (default {DEFAULT_OUT}/)",
    )
    parser.add_argument(
        "--examples",
        type=_positive_int,
        default=DEFAULT_EXAMPLES,
        metavar="N",
        help=f"gate decisions generated for the property invariants (default {DEFAULT_EXAMPLES})",
    )
    parser.add_argument(
        "--crosshair-seconds",
        type=float,
        default=DEFAULT_CROSSHAIR_SECONDS,
        metavar="S",
        help="CrossHair diffbehavior's search bound against v1, in CPU seconds; 0 skips it "
        f"(default {DEFAULT_CROSSHAIR_SECONDS:g})",
    )
    parser.set_defaults(handler=run_command)
    return parser


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def run_command(args: argparse.Namespace) -> int:
    """Exit 0 when proven, 1 when not, 2 when the file cannot be read."""
    if args.crosshair_seconds < 0:
        print("practice-loop prove-policy: --crosshair-seconds must be >= 0", file=sys.stderr)
        return 2
    try:
        proof = prove(args.file, examples=args.examples, crosshair_seconds=args.crosshair_seconds)
    except OSError as error:
        print(f"practice-loop prove-policy: cannot read {args.file}: {error}", file=sys.stderr)
        return 2
    context = run_context(Path.cwd(), "crosshair-tool")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "proof.json").write_text(
        json.dumps({**proof.to_json(), "context": context}, indent=2, sort_keys=True) + "\n",
        "utf-8",
    )
    (args.out / "proof.md").write_text(render_markdown(proof, context), "utf-8")
    _print_summary(proof)
    print(f"reports: {args.out / 'proof.md'}, {args.out / 'proof.json'}")
    return 0 if proof.proven else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="practice-loop")
    add_subcommand(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return int(args.handler(args))
