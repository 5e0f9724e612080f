"""Candidate policy files: a versioned policy written as data, loaded with strict validation.

A policy file is JSON (``docs/proving-policy-versions.md``), one format for three kinds:

- ``compute_budget``: the whole ADR-0227 §8 table of one version, row for row, including the
  rows the kernel fixes (a denied gate and an unknown eligible reason), so that a candidate
  states every decision it would make;
- ``search_gate``: the status of every gate reason and the eligible reason of every
  residual kind (docs/adr/0002), the two tables of a ``SearchGatePolicy``;
- ``candidate_operators``: the closed operator-set table of ADR-0231 §10, every operator row
  with every static constraint an ``OperatorManifestRow`` holds.

``practice-loop prove-policy`` holds each one to its invariants. Loading checks the shape
only; whether the policy keeps the ADRs' invariants is the prover's question.

Every refusal is one ``PolicyFileError`` with a reason from ``PolicyFileReason`` and the key
path (``rows[2].max_parallelism``) or, for a JSON syntax error, the line and column.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from ..kernel import (
    CANDIDATE_OPERATOR_SET,
    BudgetCharge,
    BudgetLimits,
    BudgetPolicyRow,
    ComputeBudgetPolicy,
    ComputeBudgetStatus,
    EligibleReasonRow,
    GateReason,
    GateReasonStatus,
    OperatorManifestRow,
    OperatorSetManifest,
    RecordError,
    ResidualKind,
    SearchGatePolicy,
    SearchGateStatus,
)
from ..kernel.budget import COMPUTE_BUDGET_IN_FORCE, LIMIT_FIELDS, budget_verdict
from ..kernel.checks import code, version
from ..kernel.gate import SEARCH_GATE_IN_FORCE
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
    # search_gate and candidate_operators files (issue 21)
    UNKNOWN_RESIDUAL_KIND = "unknown_residual_kind"
    CODE_MALFORMED = "code_malformed"


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
    return _budget_table(_decode(raw), source)


def _decode(raw: bytes) -> object:
    """The JSON document in ``raw``: at most ``MAX_POLICY_FILE_BYTES``, UTF-8, no key twice."""
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
    return document


def _budget_table(document: object, source: str) -> BudgetTable:
    top = _keys(document, "$", _TOP_KEYS, _OPTIONAL_TOP_KEYS)
    if top["format"] != POLICY_FILE_FORMAT:
        raise _refuse(
            PolicyFileReason.FORMAT_UNSUPPORTED, "format", f"expected {POLICY_FILE_FORMAT!r}"
        )
    if top["policy"] != BUDGET_POLICY_KIND:
        raise _refuse(
            PolicyFileReason.POLICY_KIND_UNSUPPORTED,
            "policy",
            f"{top['policy']!r}: expected {BUDGET_POLICY_KIND!r} (or, read with"
            " parse_policy_file, 'search_gate' or 'candidate_operators')",
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


VERSION_IN_FORCE = table_of(COMPUTE_BUDGET_IN_FORCE)


# --------------------------------------------------------------------------------------------
# search_gate files (issue 21): the two tables of a SearchGatePolicy (docs/adr/0002).

GATE_POLICY_KIND = "search_gate"
_GATE_TOP_KEYS = ("format", "policy", "version", "reason_statuses", "eligible_reasons")
_GATE_VERSION_SHAPE = re.compile(r"search_gate\.v[1-9][0-9]*")
# The kinds whose eligible reason every gate file states; ``unclassified`` may be written,
# and the prover then names the invariant it breaks (ADR-0226 §7B).
SEARCHABLE_KINDS = tuple(kind for kind in ResidualKind if kind is not ResidualKind.UNCLASSIFIED)


@dataclasses.dataclass(frozen=True, slots=True)
class GateTable:
    """A whole ``search_gate`` policy as written: each reason's status, in rule order, and
    each residual kind the file maps, with its reason, in ``ResidualKind`` order."""

    version: str
    statuses: tuple[tuple[GateReason, SearchGateStatus], ...]
    eligible: tuple[tuple[ResidualKind, GateReason], ...]
    source: str

    def status_of(self, reason: GateReason) -> SearchGateStatus:
        return dict(self.statuses)[reason]

    def reason_of(self, kind: ResidualKind) -> GateReason | None:
        return dict(self.eligible).get(kind)


def _rows_of(top: dict[str, object], key: str) -> list[object]:
    if type(top[key]) is not list:
        raise _refuse(PolicyFileReason.WRONG_TYPE, key, "expected a JSON array")
    return top[key]  # type: ignore[return-value]


def _head(
    document: object, kind: str, keys: tuple[str, ...], shape: re.Pattern[str]
) -> tuple[dict[str, object], str]:
    """The top object of a ``kind`` file and its version (the shared part of every kind)."""
    top = _keys(document, "$", keys, _OPTIONAL_TOP_KEYS)
    if top["format"] != POLICY_FILE_FORMAT:
        raise _refuse(
            PolicyFileReason.FORMAT_UNSUPPORTED, "format", f"expected {POLICY_FILE_FORMAT!r}"
        )
    if top["policy"] != kind:
        raise _refuse(PolicyFileReason.POLICY_KIND_UNSUPPORTED, "policy", f"expected {kind!r}")
    policy_version = _text(top["version"], "version")
    if version(policy_version) is not None or not shape.fullmatch(policy_version):
        raise _refuse(
            PolicyFileReason.VERSION_MALFORMED,
            "version",
            f"{policy_version!r}: expected {kind}.vN",
        )
    return top, policy_version


def _keyed_table(
    top: dict, name: str, key: tuple[str, type[E], PolicyFileReason],
    value: tuple[str, type[enum.Enum], PolicyFileReason], required: Iterable[E], missing: str,
) -> dict[E, enum.Enum]:  # fmt: skip
    """The rows of ``top[name]`` as a mapping from each row's ``key`` member to its
    ``value`` member: every cell a member of its vocabulary, no key twice, every ``required``
    key stated (``missing`` says why), each refusal naming its row."""
    (key_field, key_type, key_reason), (value_field, value_type, value_reason) = key, value
    found: dict[E, enum.Enum] = {}
    seen: dict[E, int] = {}
    for index, row in enumerate(_rows_of(top, name)):
        where = f"{name}[{index}]"
        fields = _keys(row, where, (key_field, value_field), _OPTIONAL_ROW_KEYS)
        member = _member(key_type, fields[key_field], f"{where}.{key_field}", key_reason)
        cell = _member(value_type, fields[value_field], f"{where}.{value_field}", value_reason)
        if member in seen:
            detail = f"{member.value} already stated at {name}[{seen[member]}]"
            raise _refuse(PolicyFileReason.DUPLICATE_ROW, where, detail)
        seen[member] = index
        found[member] = cell
    for member in required:
        if member not in found:
            raise _refuse(PolicyFileReason.MISSING_ROW, name, f"{member.value}: {missing}")
    return found


def _gate_table(document: object, source: str) -> GateTable:
    top, policy_version = _head(document, GATE_POLICY_KIND, _GATE_TOP_KEYS, _GATE_VERSION_SHAPE)
    reason = ("reason_code", GateReason, PolicyFileReason.UNKNOWN_GATE_REASON)
    statuses = _keyed_table(
        top, "reason_statuses", reason,
        ("status", SearchGateStatus, PolicyFileReason.UNKNOWN_GATE_STATUS),
        GateReason, "no status for it: every reason of docs/adr/0002 is stated",
    )  # fmt: skip
    eligible = _keyed_table(
        top, "eligible_reasons",
        ("residual_kind", ResidualKind, PolicyFileReason.UNKNOWN_RESIDUAL_KIND), reason,
        SEARCHABLE_KINDS, "no eligible reason for it: every searchable kind is stated",
    )  # fmt: skip
    return GateTable(
        policy_version,
        tuple((reason, statuses[reason]) for reason in GateReason),  # type: ignore[misc]
        tuple((kind, eligible[kind]) for kind in ResidualKind if kind in eligible),  # type: ignore[misc]
        source,
    )


def parse_gate_table(raw: bytes, source: str) -> GateTable:
    """The ``search_gate`` policy in ``raw``, or ``PolicyFileError`` naming the first problem."""
    return _gate_table(_decode(raw), source)


def gate_table_of(policy: SearchGatePolicy, source: str = "kernel") -> GateTable:
    """A kernel gate policy as a table."""
    return GateTable(
        policy.version,
        tuple((row.reason, row.status) for row in policy.reason_statuses),
        tuple((row.kind, row.reason) for row in policy.eligible_reasons),
        source,
    )


def kernel_gate_policy(table: GateTable) -> SearchGatePolicy | RecordError:
    """The kernel value of a gate table, or the ``RecordError`` the kernel refuses it with."""
    try:
        return SearchGatePolicy(
            table.version,
            tuple(GateReasonStatus(reason, status) for reason, status in table.statuses),
            tuple(EligibleReasonRow(kind, reason) for kind, reason in table.eligible),
        )
    except RecordError as error:
        return error


GATE_IN_FORCE = gate_table_of(SEARCH_GATE_IN_FORCE)


# --------------------------------------------------------------------------------------------
# candidate_operators files (issue 21): the closed operator-set table of ADR-0231 §10.

OPERATORS_POLICY_KIND = "candidate_operators"
_OPERATORS_TOP_KEYS = ("format", "policy", "version", "operators")
_OPERATORS_VERSION_SHAPE = re.compile(r"candidate_operators\.v[1-9][0-9]*")
_CODE_LIST_FIELDS = (
    "allowed_residual_kinds",
    "allowed_residual_codes",
    "allowed_candidate_organs",
    "input_obligations",
    "ordering_key",
    "forbidden_side_effects",
    "replay_obligations",
)
_COUNT_FIELDS = ("max_attempts_per_run", "depth", "max_parallelism")
_OPERATOR_ROW_KEYS = (
    "operator_name",
    "operator_version",
    *_CODE_LIST_FIELDS,
    *_COUNT_FIELDS,
    "budget_charge",
    "schema_versions",
    "policy_versions",
    "output_candidate_shape",
)


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorRow:
    """One operator row as written: every static constraint of ADR-0231 §10 (and ADR-0228
    §8's declarations), in ``OperatorManifestRow`` field order."""

    operator_name: str
    operator_version: str
    allowed_residual_kinds: tuple[str, ...]
    allowed_residual_codes: tuple[str, ...]
    allowed_candidate_organs: tuple[str, ...]
    max_attempts_per_run: int
    budget_charge: tuple[int, int]  # (candidates, steps)
    depth: int
    max_parallelism: int
    schema_versions: tuple[tuple[str, str], ...]  # names ascending
    policy_versions: tuple[tuple[str, str], ...]  # names ascending
    input_obligations: tuple[str, ...]
    output_candidate_shape: str
    ordering_key: tuple[str, ...]
    forbidden_side_effects: tuple[str, ...]
    replay_obligations: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.operator_name} ({self.operator_version})"


@dataclasses.dataclass(frozen=True, slots=True)
class OperatorTable:
    """A whole ``candidate_operators`` table: the version and its operator rows, in order."""

    version: str
    operators: tuple[OperatorRow, ...]
    source: str


def _code_text(value: object, where: str) -> str:
    text = _text(value, where)
    if code(text) is not None:
        raise _refuse(
            PolicyFileReason.CODE_MALFORMED, where, f"{text!r} is not a lowercase snake-case code"
        )
    return text


def _version_text(value: object, where: str) -> str:
    text = _text(value, where)
    if version(text) is not None:
        raise _refuse(PolicyFileReason.VERSION_MALFORMED, where, f"{text!r} is not a version")
    return text


def _codes(value: object, where: str) -> tuple[str, ...]:
    if type(value) is not list:
        raise _refuse(PolicyFileReason.WRONG_TYPE, where, "expected a JSON array of codes")
    return tuple(_code_text(item, f"{where}[{index}]") for index, item in enumerate(value))


def _pins(value: object, where: str) -> tuple[tuple[str, str], ...]:
    """``{name: version}``, read as pairs with the names ascending (an object has no order)."""
    if type(value) is not dict:
        raise _refuse(PolicyFileReason.WRONG_TYPE, where, "expected a JSON object name: version")
    pairs = [
        (_code_text(name, f"{where}.{name}"), _version_text(pinned, f"{where}.{name}"))
        for name, pinned in value.items()
    ]
    return tuple(sorted(pairs))


def _operator_row(value: object, where: str) -> OperatorRow:
    fields = _keys(value, where, _OPERATOR_ROW_KEYS, _OPTIONAL_ROW_KEYS)
    charge = _keys(fields["budget_charge"], f"{where}.budget_charge", ("candidates", "steps"), ())
    return OperatorRow(
        operator_name=_code_text(fields["operator_name"], f"{where}.operator_name"),
        operator_version=_version_text(fields["operator_version"], f"{where}.operator_version"),
        allowed_residual_kinds=_codes(
            fields["allowed_residual_kinds"], f"{where}.allowed_residual_kinds"
        ),
        allowed_residual_codes=_codes(
            fields["allowed_residual_codes"], f"{where}.allowed_residual_codes"
        ),
        allowed_candidate_organs=_codes(
            fields["allowed_candidate_organs"], f"{where}.allowed_candidate_organs"
        ),
        max_attempts_per_run=_limit(
            fields["max_attempts_per_run"], f"{where}.max_attempts_per_run"
        ),
        budget_charge=(
            _limit(charge["candidates"], f"{where}.budget_charge.candidates"),
            _limit(charge["steps"], f"{where}.budget_charge.steps"),
        ),
        depth=_limit(fields["depth"], f"{where}.depth"),
        max_parallelism=_limit(fields["max_parallelism"], f"{where}.max_parallelism"),
        schema_versions=_pins(fields["schema_versions"], f"{where}.schema_versions"),
        policy_versions=_pins(fields["policy_versions"], f"{where}.policy_versions"),
        input_obligations=_codes(fields["input_obligations"], f"{where}.input_obligations"),
        output_candidate_shape=_code_text(
            fields["output_candidate_shape"], f"{where}.output_candidate_shape"
        ),
        ordering_key=_codes(fields["ordering_key"], f"{where}.ordering_key"),
        forbidden_side_effects=_codes(
            fields["forbidden_side_effects"], f"{where}.forbidden_side_effects"
        ),
        replay_obligations=_codes(fields["replay_obligations"], f"{where}.replay_obligations"),
    )


def _operator_table(document: object, source: str) -> OperatorTable:
    top, policy_version = _head(
        document, OPERATORS_POLICY_KIND, _OPERATORS_TOP_KEYS, _OPERATORS_VERSION_SHAPE
    )
    rows: list[OperatorRow] = []
    seen: dict[tuple[str, str], int] = {}
    for index, value in enumerate(_rows_of(top, "operators")):
        row = _operator_row(value, f"operators[{index}]")
        key = (row.operator_name, row.operator_version)
        if key in seen:
            raise _refuse(
                PolicyFileReason.DUPLICATE_ROW,
                f"operators[{index}]",
                f"{row.describe()} already stated at operators[{seen[key]}] (ADR-0231 §10)",
            )
        seen[key] = index
        rows.append(row)
    if not rows:
        raise _refuse(
            PolicyFileReason.MISSING_ROW, "operators", "an operator set names its operators"
        )
    return OperatorTable(policy_version, tuple(rows), source)


def parse_operator_table(raw: bytes, source: str) -> OperatorTable:
    """The ``candidate_operators`` table in ``raw``, or ``PolicyFileError``."""
    return _operator_table(_decode(raw), source)


def operator_table_of(manifest: OperatorSetManifest, source: str = "kernel") -> OperatorTable:
    """A kernel operator set as a table."""
    return OperatorTable(
        manifest.operator_set_version,
        tuple(
            OperatorRow(
                **{
                    **{field.name: getattr(row, field.name) for field in dataclasses.fields(row)},
                    "budget_charge": (row.budget_charge.candidates, row.budget_charge.steps),
                }
            )
            for row in manifest.operators
        ),
        source,
    )


def kernel_operator_set(table: OperatorTable) -> OperatorSetManifest | RecordError:
    """The kernel value of an operator table, or the ``RecordError`` it is refused with."""
    try:
        return OperatorSetManifest(
            table.version,
            tuple(
                OperatorManifestRow(
                    **{
                        **{
                            field.name: getattr(row, field.name)
                            for field in dataclasses.fields(row)
                        },
                        "budget_charge": BudgetCharge(*row.budget_charge),
                    }
                )
                for row in table.operators
            ),
        )
    except RecordError as error:
        return error


OPERATORS_IN_FORCE = operator_table_of(CANDIDATE_OPERATOR_SET)


# --------------------------------------------------------------------------------------------
# Any kind.

PolicyTable = BudgetTable | GateTable | OperatorTable
POLICY_KINDS = (BUDGET_POLICY_KIND, GATE_POLICY_KIND, OPERATORS_POLICY_KIND)


def parse_policy_file(raw: bytes, source: str) -> PolicyTable:
    """The policy in ``raw``, of the kind its ``policy`` key names, or ``PolicyFileError``
    (a file naming no kind is read as a budget table, whose loader names what is wrong)."""
    document = _decode(raw)
    kind = document.get("policy") if type(document) is dict else None
    if kind == GATE_POLICY_KIND:
        return _gate_table(document, source)
    if kind == OPERATORS_POLICY_KIND:
        return _operator_table(document, source)
    if type(document) is dict and "policy" in document and kind != BUDGET_POLICY_KIND:
        if document.get("format") != POLICY_FILE_FORMAT:
            raise _refuse(
                PolicyFileReason.FORMAT_UNSUPPORTED, "format", f"expected {POLICY_FILE_FORMAT!r}"
            )
        raise _refuse(
            PolicyFileReason.POLICY_KIND_UNSUPPORTED,
            "policy",
            f"{kind!r}: expected one of {', '.join(POLICY_KINDS)}",
        )
    return _budget_table(document, source)


def load_policy_file(path: Path) -> PolicyTable:
    """Read and parse a policy file of any kind; ``OSError`` is the caller's."""
    with path.open("rb") as handle:
        raw = handle.read(MAX_POLICY_FILE_BYTES + 1)
    return parse_policy_file(raw, str(path))


def next_unregistered_version(name: str, registered: Mapping[str, object]) -> str:
    """``name.vN`` for the first N past every registered ``name.vK``: a version the kernel
    must refuse, whichever versions have been adopted (``prove-policy --adopt``)."""
    numbers = [
        int(found.group(1))
        for version in registered
        if (found := re.fullmatch(rf"{re.escape(name)}\.v(\d+)", version))
    ]
    return f"{name}.v{max(numbers, default=0) + 1}"
