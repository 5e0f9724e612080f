"""Candidate policy files: a budget table written as data, loaded with strict validation.

A policy file is JSON (``docs/proving-policy-versions.md``): the whole ADR-0227 §8 table of
one ``compute_budget`` version, row for row, including the rows the kernel fixes (a denied
gate and an unknown eligible reason), so that a candidate states every decision it would
make and ``practice-loop prove-policy`` can hold each one to its invariant. Loading checks
the shape only; whether the table keeps the ADRs' invariants is the prover's question.

Every refusal is one ``PolicyFileError`` with a reason from ``PolicyFileReason`` and the key
path (``rows[2].max_parallelism``) or, for a JSON syntax error, the line and column.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from pathlib import Path
from typing import TypeVar

from ..kernel import (
    COMPUTE_BUDGET_V1,
    BudgetLimits,
    BudgetPolicyRow,
    ComputeBudgetPolicy,
    ComputeBudgetStatus,
    GateReason,
    RecordError,
    SearchGateStatus,
)
from ..kernel.budget import LIMIT_FIELDS, budget_verdict
from ..kernel.checks import code, version
from ..kernel.identity import MAX_SAFE_INT

POLICY_FILE_FORMAT = "practice_loop.policy_file.v1"
BUDGET_POLICY_KIND = "compute_budget"
# The gate-reason cell of the row for any eligible reason the table has no row for.
ANY_OTHER_REASON = "*"
MAX_POLICY_FILE_BYTES = 1 << 20
E = TypeVar("E", bound=enum.Enum)

_TOP_KEYS = ("format", "policy", "version", "rows")
_OPTIONAL_TOP_KEYS = ("comment",)
_ROW_KEYS = ("gate_status", "gate_reason_code", "status", "reason_code", *LIMIT_FIELDS)
_OPTIONAL_ROW_KEYS = ("comment",)
_VERSION_SHAPE = re.compile(r"compute_budget\.v[1-9][0-9]*")
# search_gate.v1's eligible reasons: the only codes an ELIGIBLE row may name.
ELIGIBLE_GATE_REASONS = tuple(
    reason.value for reason in GateReason if reason.value.startswith("eligible_")
)
DENIED_GATE_STATUSES = tuple(
    status for status in SearchGateStatus if status is not SearchGateStatus.ELIGIBLE
)


class PolicyFileReason(enum.Enum):
    TOO_LARGE = "too_large"
    NOT_UTF8 = "not_utf8"
    NOT_JSON = "not_json"
    DUPLICATE_KEY = "duplicate_key"
    WRONG_TYPE = "wrong_type"
    UNKNOWN_KEY = "unknown_key"
    MISSING_KEY = "missing_key"
    FORMAT_UNSUPPORTED = "format_unsupported"
    POLICY_KIND_UNSUPPORTED = "policy_kind_unsupported"
    VERSION_MALFORMED = "version_malformed"
    UNKNOWN_GATE_STATUS = "unknown_gate_status"
    UNKNOWN_GATE_REASON = "unknown_gate_reason"
    UNKNOWN_STATUS = "unknown_status"
    REASON_CODE_MALFORMED = "reason_code_malformed"
    NEGATIVE_LIMIT = "negative_limit"
    LIMIT_OUT_OF_RANGE = "limit_out_of_range"
    DUPLICATE_ROW = "duplicate_row"
    MISSING_ROW = "missing_row"


@dataclasses.dataclass(frozen=True, slots=True)
class PolicyFileError(Exception):
    """Why a policy file was refused, and where."""

    reason: PolicyFileReason
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.reason.value}: {self.detail}"


@dataclasses.dataclass(frozen=True, slots=True)
class TableRow:
    """One row of a budget table as written: the gate it answers and what it grants."""

    gate_status: SearchGateStatus
    gate_reason_code: str  # an eligible reason, or ANY_OTHER_REASON
    status: ComputeBudgetStatus
    reason_code: str
    limits: tuple[int, int, int, int]  # in LIMIT_FIELDS order

    @property
    def key(self) -> tuple[SearchGateStatus, str]:
        return self.gate_status, self.gate_reason_code

    def describe(self) -> str:
        return f"{self.gate_status.value}/{self.gate_reason_code}"


@dataclasses.dataclass(frozen=True, slots=True)
class BudgetTable:
    """A whole ``compute_budget`` table, every cell of ADR-0227 §8 stated."""

    version: str
    rows: tuple[TableRow, ...]
    source: str

    def row(self, gate_status: SearchGateStatus, gate_reason_code: str) -> TableRow:
        """The row that answers this gate (complete tables answer every gate)."""
        if gate_status is not SearchGateStatus.ELIGIBLE:
            gate_reason_code = ANY_OTHER_REASON
        elif gate_reason_code not in ELIGIBLE_GATE_REASONS:
            gate_reason_code = ANY_OTHER_REASON
        for candidate in self.rows:
            if candidate.key == (gate_status, gate_reason_code):
                return candidate
        raise KeyError((gate_status, gate_reason_code))


def required_row_keys() -> tuple[tuple[SearchGateStatus, str], ...]:
    """The cells every table states: each denied status, each eligible reason, and any
    other eligible reason (ADR-0227 §8)."""
    denied = tuple((status, ANY_OTHER_REASON) for status in DENIED_GATE_STATUSES)
    eligible = tuple((SearchGateStatus.ELIGIBLE, reason) for reason in ELIGIBLE_GATE_REASONS)
    return denied + eligible + ((SearchGateStatus.ELIGIBLE, ANY_OTHER_REASON),)


def _refuse(reason: PolicyFileReason, where: str, detail: str) -> PolicyFileError:
    return PolicyFileError(reason, where, detail)


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found: dict[str, object] = {}
    for key, value in pairs:
        if key in found:
            raise _refuse(PolicyFileReason.DUPLICATE_KEY, key, "the key appears twice")
        found[key] = value
    return found


def _keys(
    value: object, where: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, object]:
    if type(value) is not dict:
        raise _refuse(PolicyFileReason.WRONG_TYPE, where, "expected a JSON object")
    for key in value:
        if key not in required and key not in optional:
            hint = (
                " (a limit is a constant of the gate's status and reason code: no adaptive"
                " scaling, ADR-0227 §8)"
                if where.startswith("rows")
                else ""
            )
            raise _refuse(PolicyFileReason.UNKNOWN_KEY, _at(where, key), f"unknown key{hint}")
    for key in required:
        if key not in value:
            raise _refuse(PolicyFileReason.MISSING_KEY, _at(where, key), "required key missing")
    if "comment" in value and type(value["comment"]) is not str:
        raise _refuse(PolicyFileReason.WRONG_TYPE, _at(where, "comment"), "expected a string")
    return value


def _at(where: str, key: str) -> str:
    return key if where == "$" else f"{where}.{key}"


def _text(value: object, where: str) -> str:
    if type(value) is not str:
        raise _refuse(PolicyFileReason.WRONG_TYPE, where, "expected a string")
    return value


def _limit(value: object, where: str) -> int:
    if type(value) is not int:
        raise _refuse(
            PolicyFileReason.WRONG_TYPE,
            where,
            "expected an integer constant (no adaptive scaling, ADR-0227 §8)",
        )
    if value < 0:
        raise _refuse(PolicyFileReason.NEGATIVE_LIMIT, where, f"{value} is negative")
    if value > MAX_SAFE_INT:
        raise _refuse(PolicyFileReason.LIMIT_OUT_OF_RANGE, where, f"{value} is too large")
    return value


def _member(enum_type: type[E], value: object, where: str, unknown: PolicyFileReason) -> E:
    text = _text(value, where)
    try:
        return enum_type(text)
    except ValueError:
        raise _refuse(unknown, where, f"{text!r} is not a {enum_type.__name__}") from None


def _row(value: object, where: str) -> TableRow:
    fields = _keys(value, where, _ROW_KEYS, _OPTIONAL_ROW_KEYS)
    gate_status = _member(
        SearchGateStatus,
        fields["gate_status"],
        f"{where}.gate_status",
        PolicyFileReason.UNKNOWN_GATE_STATUS,
    )
    gate_reason = _text(fields["gate_reason_code"], f"{where}.gate_reason_code")
    known = ELIGIBLE_GATE_REASONS if gate_status is SearchGateStatus.ELIGIBLE else ()
    if gate_reason != ANY_OTHER_REASON and gate_reason not in known:
        allowed = ", ".join((*known, ANY_OTHER_REASON))
        raise _refuse(
            PolicyFileReason.UNKNOWN_GATE_REASON,
            f"{where}.gate_reason_code",
            f"{gate_reason!r} for {gate_status.value}: expected one of {allowed}",
        )
    status = _member(
        ComputeBudgetStatus, fields["status"], f"{where}.status", PolicyFileReason.UNKNOWN_STATUS
    )
    reason_code = _text(fields["reason_code"], f"{where}.reason_code")
    if code(reason_code) is not None:
        raise _refuse(
            PolicyFileReason.REASON_CODE_MALFORMED,
            f"{where}.reason_code",
            f"{reason_code!r} is not a lowercase snake-case code",
        )
    limits = tuple(_limit(fields[name], f"{where}.{name}") for name in LIMIT_FIELDS)
    return TableRow(gate_status, gate_reason, status, reason_code, limits)  # type: ignore[arg-type]


def parse_budget_table(raw: bytes, source: str) -> BudgetTable:
    """The table in ``raw``, or ``PolicyFileError`` naming the first problem."""
    if len(raw) > MAX_POLICY_FILE_BYTES:
        raise _refuse(PolicyFileReason.TOO_LARGE, "$", f"over {MAX_POLICY_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _refuse(PolicyFileReason.NOT_UTF8, f"byte {error.start}", "not UTF-8") from None
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise _refuse(
            PolicyFileReason.NOT_JSON, f"line {error.lineno} column {error.colno}", error.msg
        ) from None
    except RecursionError:
        raise _refuse(PolicyFileReason.NOT_JSON, "$", "nested too deeply") from None
    top = _keys(document, "$", _TOP_KEYS, _OPTIONAL_TOP_KEYS)
    if top["format"] != POLICY_FILE_FORMAT:
        raise _refuse(
            PolicyFileReason.FORMAT_UNSUPPORTED, "format", f"expected {POLICY_FILE_FORMAT!r}"
        )
    if top["policy"] != BUDGET_POLICY_KIND:
        raise _refuse(
            PolicyFileReason.POLICY_KIND_UNSUPPORTED,
            "policy",
            f"{top['policy']!r}: only {BUDGET_POLICY_KIND!r} tables are loaded from files",
        )
    policy_version = _text(top["version"], "version")
    if version(policy_version) is not None or not _VERSION_SHAPE.fullmatch(policy_version):
        raise _refuse(
            PolicyFileReason.VERSION_MALFORMED,
            "version",
            f"{policy_version!r}: expected compute_budget.vN (ADR-0227 §6)",
        )
    if type(top["rows"]) is not list:
        raise _refuse(PolicyFileReason.WRONG_TYPE, "rows", "expected a JSON array")
    rows: list[TableRow] = []
    seen: dict[tuple[SearchGateStatus, str], int] = {}
    for index, value in enumerate(top["rows"]):
        row = _row(value, f"rows[{index}]")
        if row.key in seen:
            raise _refuse(
                PolicyFileReason.DUPLICATE_ROW,
                f"rows[{index}]",
                f"{row.describe()} already stated at rows[{seen[row.key]}] (ADR-0227 §8)",
            )
        seen[row.key] = index
        rows.append(row)
    for key in required_row_keys():
        if key not in seen:
            raise _refuse(
                PolicyFileReason.MISSING_ROW,
                "rows",
                f"no row for {key[0].value}/{key[1]}: every cell of ADR-0227 §8 is stated",
            )
    return BudgetTable(policy_version, tuple(rows), source)


def load_budget_table(path: Path) -> BudgetTable:
    """Read and parse a policy file; ``OSError`` is the caller's (a usage error)."""
    with path.open("rb") as handle:
        raw = handle.read(MAX_POLICY_FILE_BYTES + 1)
    return parse_budget_table(raw, str(path))


def table_of(policy: ComputeBudgetPolicy, source: str = "kernel") -> BudgetTable:
    """A kernel policy as a whole table: every cell is what the kernel's own lookup
    (``budget_verdict``) answers for it, the rows ADR-0227 §8 fixes included."""
    rows = []
    for gate_status, gate_reason in required_row_keys():
        verdict = budget_verdict(gate_status, gate_reason, policy)
        limits = tuple(getattr(verdict.limits, name) for name in LIMIT_FIELDS)
        rows.append(TableRow(gate_status, gate_reason, verdict.status, verdict.reason_code, limits))  # type: ignore[arg-type]
    return BudgetTable(policy.version, tuple(rows), source)


def kernel_policy(table: BudgetTable) -> ComputeBudgetPolicy | RecordError:
    """The kernel value for a table's eligible rows. The kernel fixes the other rows itself,
    so this is faithful only for a table that keeps them (the prover checks that first); a
    row the kernel refuses comes back as its ``RecordError``."""
    try:
        return ComputeBudgetPolicy(
            table.version,
            tuple(
                BudgetPolicyRow(
                    row.gate_reason_code, row.status, row.reason_code, BudgetLimits(*row.limits)
                )
                for row in table.rows
                if row.gate_status is SearchGateStatus.ELIGIBLE
                and row.gate_reason_code != ANY_OTHER_REASON
            ),
        )
    except RecordError as error:
        return error


VERSION_IN_FORCE = table_of(COMPUTE_BUDGET_V1)
