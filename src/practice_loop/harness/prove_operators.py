"""The invariants of a candidate ``candidate_operators`` table (issue 21), and its differences.

The operator set is the closed, static, versioned table of ADR-0231 §10, whose digest is
``operator_set_id``. Table invariants read every row as written (so that a row the kernel
would refuse is still judged clause by clause); the property invariant runs the kernel's own
admission check (``attempt_charge_failure``, ADR-0231 §7.3.17-20) with each row's constraints
on the budgets the generated chains were granted.
"""

from __future__ import annotations

import dataclasses

from ..kernel import (
    CANDIDATE_OPERATOR_POLICY_VERSION,
    CANDIDATE_OPERATOR_SET,
    EMPTY_OPERATOR_SET,
    UNARY_DELTA_ORGAN,
    ComputeBudgetStatus,
    OperatorSetManifest,
    RecordError,
    ResidualKind,
    operator_set_id,
)
from ..kernel.budget import BUDGET_POLICIES
from ..kernel.gate import GATE_POLICIES
from ..kernel.operators import (
    CANDIDATE_OPERATOR_SETS,
    OPERATOR_NAME,
    OPERATOR_VERSION,
    OperatorRefusalReason,
    attempt_charge_failure,
)
from ..kernel.search_run import SUPPORTED_RUN_POLICY_VERSIONS
from .policy_file import OPERATORS_IN_FORCE, OperatorRow, OperatorTable, kernel_operator_set
from .policy_invariants import Difference, Invariant, generated_chains

# The operator sets this kernel registers (ADR-0228 §9: the run accepts no other).
OPERATOR_SETS = {
    EMPTY_OPERATOR_SET.operator_set_version: EMPTY_OPERATOR_SET,
    **CANDIDATE_OPERATOR_SETS,
}
# ADR-0231 §6: what the one authorized operator may serve.
AUTHORISED_KINDS = (ResidualKind.MISSING_ROLE.value,)
AUTHORISED_CODES = ("direction_unbound",)
AUTHORISED_ORGANS = (UNARY_DELTA_ORGAN,)
# The versions each pinned policy may name: the kernel's registries (ADR-0227 §6, ADR-0231 §10).
REGISTERED_PINS = {
    "candidate_operator": (CANDIDATE_OPERATOR_POLICY_VERSION,),
    "compute_budget": tuple(BUDGET_POLICIES),
    "geometric_search_run": tuple(SUPPORTED_RUN_POLICY_VERSIONS),
    "search_gate": tuple(GATE_POLICIES),
}


def _served_budget_rows(row: OperatorRow) -> list[tuple[str, str, tuple[int, int, int, int]]]:
    """Every allowed row of every registered budget version for a kind the operator serves:
    (budget version, gate reason, limits)."""
    found = []
    for budget_version, policy in BUDGET_POLICIES.items():
        for budget_row in policy.rows:
            served = budget_row.gate_reason_code.removeprefix("eligible_")
            if (
                served in row.allowed_residual_kinds
                and budget_row.status is ComputeBudgetStatus.BUDGET_ALLOWED
            ):
                limits = budget_row.limits
                found.append(
                    (
                        budget_version,
                        budget_row.gate_reason_code,
                        (
                            limits.max_candidates,
                            limits.max_depth,
                            limits.max_steps,
                            limits.max_parallelism,
                        ),
                    )
                )
    return found


def _closed_table(table: OperatorTable, _: object, __: int) -> list[str]:
    return [
        f"{row.describe()} is not an operator this kernel implements (no hidden or fallback"
        " operator)"
        for row in table.operators
        if (row.operator_name, row.operator_version) != (OPERATOR_NAME, OPERATOR_VERSION)
    ]


def _one_attempt(table: OperatorTable, _: object, __: int) -> list[str]:
    return [
        f"{row.describe()} allows {row.max_attempts_per_run} attempts per run"
        for row in table.operators
        if row.max_attempts_per_run != 1
    ]


def _charge_fits(table: OperatorTable, _: object, __: int) -> list[str]:
    found = []
    for row in table.operators:
        candidates, steps = row.budget_charge
        if candidates != 1 or steps < 1:
            found.append(f"{row.describe()} charges {row.budget_charge}, not 1 candidate, >=1 step")
            continue
        for budget_version, reason, limits in _served_budget_rows(row):
            refused = first_attempt_refusal(row, limits)
            if refused is not None:
                found.append(
                    f"{row.describe()}: its charge does not fit {budget_version} {reason}"
                    f" {limits} ({refused.value})"
                )
    return found


def first_attempt_refusal(
    row: OperatorRow, limits: tuple[int, int, int, int]
) -> OperatorRefusalReason | None:
    """Why the kernel refuses the row's first attempt on a grant of ``limits``, or None: the
    fixed charge and depth of one serial attempt (ADR-0231 §7.3.17-20)."""
    return attempt_charge_failure(0, limits, row.budget_charge, (max(row.depth, 1), 1, 1))


def _serial_only(table: OperatorTable, _: object, __: int) -> list[str]:
    return [
        f"{row.describe()} declares max_parallelism {row.max_parallelism}"
        for row in table.operators
        if row.max_parallelism != 1
    ]


def _authorised_only(table: OperatorTable, _: object, __: int) -> list[str]:
    found = []
    for row in table.operators:
        for field, allowed in (
            ("allowed_residual_kinds", AUTHORISED_KINDS),
            ("allowed_residual_codes", AUTHORISED_CODES),
            ("allowed_candidate_organs", AUTHORISED_ORGANS),
        ):
            extra = [value for value in getattr(row, field) if value not in allowed]
            if extra:
                found.append(f"{row.describe()} {field} names {', '.join(extra)}: not authorised")
    return found


def _changed_table_changes_id(
    table: OperatorTable, manifest: OperatorSetManifest | None, __: int
) -> list[str]:
    found = []
    registered = OPERATOR_SETS.get(table.version)
    if registered is not None and kernel_operator_set(table) != registered:
        found.append(
            f"{table.version} is already the registered set with another table: a changed"
            " table needs a new version"
        )
    # Against every registered set, not only the one in force (ADR-0231 §10).
    for version, other in CANDIDATE_OPERATOR_SETS.items():
        if manifest is not None and manifest != other:
            if operator_set_id(manifest) == operator_set_id(other):
                found.append(f"the changed table has {version}'s operator_set_id")
    return found


def _kernel_accepts(table: OperatorTable, _: object, __: int) -> list[str]:
    built = kernel_operator_set(table)
    return [f"the kernel refuses the table: {built}"] if isinstance(built, RecordError) else []


def _admits_within_grant(table: OperatorTable, _: object, examples: int) -> list[str]:
    found = []
    for chain in generated_chains(examples):
        budget = chain.budget
        if budget.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
            continue
        limits = (budget.max_candidates, budget.max_depth, budget.max_steps, budget.max_parallelism)
        for row in table.operators:
            policy_limits = (max(row.depth, 1), max(row.max_attempts_per_run, 1), 1)
            charge = (max(row.budget_charge[0], 1), max(row.budget_charge[1], 1))
            for attempt_index in range(budget.max_candidates + 1):
                if attempt_charge_failure(attempt_index, limits, charge, policy_limits) is None:
                    used = attempt_index + 1
                    if (
                        used * charge[0] > limits[0]
                        or used * charge[1] > limits[2]
                        or row.depth > limits[1]
                        or used > 1
                    ):
                        found.append(
                            f"{row.describe()}: attempt {attempt_index} admitted on"
                            f" {budget.reason_code} {limits}"
                        )
    return found[:5]


OPERATOR_INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        "closed_table",
        "ADR-0231 §10, §11 (no hidden fallback operator)",
        "every row is an operator this kernel implements, each named once",
        _closed_table,
    ),
    Invariant(
        "one_attempt_per_run",
        "ADR-0231 §6, §11",
        "every operator allows exactly one attempt per run",
        _one_attempt,
    ),
    Invariant(
        "fixed_charge_fits_every_budget",
        "ADR-0231 §6, §7.3.19, §11",
        "a fixed charge of one candidate that fits every allowed budget row of the kinds served",
        _charge_fits,
    ),
    Invariant(
        "serial_only",
        "ADR-0231 §6, §11; ADR-0228 §11",
        "every operator runs serially (max_parallelism 1)",
        _serial_only,
    ),
    Invariant(
        "authorised_kinds_codes_organs",
        "ADR-0231 §6",
        "only the authorised residual kinds, residual codes and candidate organs",
        _authorised_only,
    ),
    Invariant(
        "changed_table_changes_id",
        "ADR-0231 §10",
        "a changed table carries a version of its own and changes operator_set_id",
        _changed_table_changes_id,
    ),
    Invariant(
        "kernel_accepts_table",
        "docs/adr/0003 (records validate on construction)",
        "the kernel builds the table as an OperatorSetManifest",
        _kernel_accepts,
    ),
    Invariant(
        "admits_within_grant",
        "ADR-0231 §7.3.17-20, §11",
        "on generated budgets, the kernel admits an operator's attempt only while its fixed"
        " charge fits the grant, and only one",
        _admits_within_grant,
    ),
)


def operator_table_differences(
    table: OperatorTable, other: OperatorTable = OPERATORS_IN_FORCE
) -> list[Difference]:
    """The version, then each operator added, removed or changed, field by field."""
    differences = []
    if table.version != other.version:
        differences.append(
            Difference("table", "operator_set_version", other.version, table.version)
        )
    theirs = {(row.operator_name, row.operator_version): row for row in other.operators}
    ours = {(row.operator_name, row.operator_version): row for row in table.operators}
    for key in [*theirs, *(key for key in ours if key not in theirs)]:
        old, new = theirs.get(key), ours.get(key)
        label = f"{key[0]} ({key[1]})"
        if old is None or new is None:
            shown = ("absent", "present") if old is None else ("present", "absent")
            differences.append(Difference("table", label, *shown))
            continue
        for field in dataclasses.fields(OperatorRow):
            before, after = getattr(old, field.name), getattr(new, field.name)
            if before != after:
                differences.append(
                    Difference("table", f"{label} {field.name}", str(before), str(after))
                )
    return differences


def _admissions(
    manifest: OperatorSetManifest, limits: tuple[int, int, int, int]
) -> tuple[tuple[str, str], ...]:
    """For each operator, how many attempts the kernel admits on a budget of ``limits`` and
    what refuses the next one (ADR-0231 §7.3.17-20)."""
    found = []
    for row in manifest.operators:
        charge = (row.budget_charge.candidates, row.budget_charge.steps)
        policy_limits = (row.depth, row.max_attempts_per_run, row.max_parallelism)
        admitted = 0
        # Ends: an attempt index at or beyond the budget's candidates is always refused.
        while (refused := attempt_charge_failure(admitted, limits, charge, policy_limits)) is None:
            admitted += 1
        found.append(
            (
                f"{row.operator_name} ({row.operator_version})",
                f"{admitted} admitted, then {refused.value}",
            )
        )
    return tuple(found)


def operator_generated_differences(
    manifest: OperatorSetManifest,
    examples: int,
    other: OperatorSetManifest = CANDIDATE_OPERATOR_SET,
) -> list[Difference]:
    """Each budget granted on the generated chains on which the operators admit attempts
    differently under ``other`` and the candidate, with what each admits."""
    differences: dict[tuple[int, int, int, int], Difference] = {}
    for chain in generated_chains(examples):
        budget = chain.budget
        if budget.status is not ComputeBudgetStatus.BUDGET_ALLOWED:
            continue
        limits = (budget.max_candidates, budget.max_depth, budget.max_steps, budget.max_parallelism)
        before, after = _admissions(other, limits), _admissions(manifest, limits)
        if before != after and limits not in differences:
            differences[limits] = Difference(
                "generated budget",
                f"{budget.reason_code} (candidates, depth, steps, parallelism) {limits}",
                "; ".join(f"{name}: {shown}" for name, shown in before),
                "; ".join(f"{name}: {shown}" for name, shown in after),
            )
    return list(differences.values())
