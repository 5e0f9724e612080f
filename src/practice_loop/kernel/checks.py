"""Field checks: the closed ``Defect`` set and the checks a record declares next to each of
its fields (docs/adr/0003).

A check takes one value and answers ``None`` or the ``Defect`` it found. Every check is at
least as strict as the hashable profile of ``identity`` (exact types, safe ints, bounded text
without lone surrogates), which is what lets a validated record be encoded without the
profile walk.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable

from .identity import DIGEST_LENGTH, MAX_SAFE_INT, MAX_TEXT_LENGTH, has_lone_surrogate


class Defect(enum.Enum):
    """Closed set of structural defects a record can have (docs/adr/0003)."""

    WRONG_RECORD_TYPE = "wrong_record_type"
    WRONG_TYPE = "wrong_type"
    BOOL_NOT_INT = "bool_not_int"
    FLOAT_NOT_INT = "float_not_int"
    INT_OUT_OF_RANGE = "int_out_of_range"
    NEGATIVE_VALUE = "negative_value"
    NOT_POSITIVE = "not_positive"
    DIGEST_MALFORMED = "digest_malformed"
    VERSION_MALFORMED = "version_malformed"
    VERSION_UNSUPPORTED = "version_unsupported"
    CODE_MALFORMED = "code_malformed"
    UNKNOWN_ENUM_VALUE = "unknown_enum_value"
    TEXT_EMPTY = "text_empty"
    TEXT_TOO_LONG = "text_too_long"
    TEXT_LONE_SURROGATE = "text_lone_surrogate"
    SEQUENCE_NOT_TUPLE = "sequence_not_tuple"
    SEQUENCE_TOO_LONG = "sequence_too_long"
    SEQUENCE_EMPTY = "sequence_empty"
    PAIRS_NOT_SORTED_UNIQUE = "pairs_not_sorted_unique"
    SPAN_START_NEGATIVE = "span_start_negative"
    SPAN_EMPTY_OR_INVERTED = "span_empty_or_inverted"
    SPAN_LENGTH_MISMATCH = "span_length_mismatch"
    SPAN_SENTENCE_INDEX_NEGATIVE = "span_sentence_index_negative"
    SPAN_NOT_IN_SOURCE = "span_not_in_source"
    REFERENCE_UNKNOWN = "reference_unknown"
    DUPLICATE_ENTRY = "duplicate_entry"
    INCONSISTENT_FIELDS = "inconsistent_fields"
    IDENTITY_MISMATCH = "identity_mismatch"
    NOT_CANONICAL = "not_canonical"


@dataclasses.dataclass(frozen=True, slots=True)
class RecordDefect:
    """Where a record is malformed: the record type, the field path and the defect."""

    record: str
    field: str
    defect: Defect

    def describe(self) -> str:
        return f"{self.record}.{self.field}: {self.defect.value}"


class RecordError(ValueError):
    """Raised by a record's constructor when its fields are malformed."""

    def __init__(self, found: RecordDefect) -> None:
        super().__init__(found.describe())
        self.found = found


FieldCheck = Callable[[object], "Defect | None"]


def check_int(value: object, *, minimum: int = 0) -> Defect | None:
    kind = type(value)
    if kind is bool:
        return Defect.BOOL_NOT_INT
    if kind is float:
        return Defect.FLOAT_NOT_INT
    if kind is not int:
        return Defect.WRONG_TYPE
    if value > MAX_SAFE_INT or value < -MAX_SAFE_INT:  # type: ignore[operator]
        return Defect.INT_OUT_OF_RANGE
    if value < minimum:  # type: ignore[operator]
        return Defect.NEGATIVE_VALUE if minimum == 0 else Defect.NOT_POSITIVE
    return None


def flag(value: object) -> Defect | None:
    """An exact ``bool`` (only where the schema says bool)."""
    return None if type(value) is bool else Defect.WRONG_TYPE


def non_negative_int(value: object) -> Defect | None:
    if type(value) is int and 0 <= value <= MAX_SAFE_INT:
        return None
    return check_int(value, minimum=0)


def positive_int(value: object) -> Defect | None:
    if type(value) is int and 1 <= value <= MAX_SAFE_INT:
        return None
    return check_int(value, minimum=1)


def text(value: object) -> Defect | None:
    """Any exact ``str`` without lone surrogates, bounded in length (prose, source text)."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    if len(value) > MAX_TEXT_LENGTH:
        return Defect.TEXT_TOO_LONG
    if has_lone_surrogate(value):
        return Defect.TEXT_LONE_SURROGATE
    return None


def label(value: object) -> Defect | None:
    """A non-empty ``text`` (entity names, units)."""
    return text(value) or (Defect.TEXT_EMPTY if value == "" else None)


_DIGEST_PATTERN = re.compile(f"[0-9a-f]{{{DIGEST_LENGTH}}}")
_VERSION_PATTERN = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*\.v[1-9][0-9]{0,5}")
_CODE_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,95}")


def is_digest(value: object) -> bool:
    return type(value) is str and _DIGEST_PATTERN.fullmatch(value) is not None


def digest(value: object) -> Defect | None:
    """A full lowercase SHA-256 hex digest: 64 characters of ``0-9a-f``."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if _DIGEST_PATTERN.fullmatch(value) is not None else Defect.DIGEST_MALFORMED


def is_version(value: object) -> bool:
    return type(value) is str and _VERSION_PATTERN.fullmatch(value) is not None


def version(value: object) -> Defect | None:
    """A policy or schema version such as ``compute_budget.v1``."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if _VERSION_PATTERN.fullmatch(value) is not None else Defect.VERSION_MALFORMED


def code(value: object) -> Defect | None:
    """A reason, blocker or obligation code: lowercase snake case, at most 96 characters."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if _CODE_PATTERN.fullmatch(value) is not None else Defect.CODE_MALFORMED


def exactly(*supported: str) -> FieldCheck:
    """A field pinned to supported values, such as a schema version."""

    def check(value: object) -> Defect | None:
        if type(value) is not str:
            return Defect.WRONG_TYPE
        if value in supported:
            return None
        return Defect.VERSION_UNSUPPORTED if is_version(value) else Defect.VERSION_MALFORMED

    return check


def member_of(enum_type: type[enum.Enum]) -> FieldCheck:
    """An exact member of a closed enum (a bare string is the wrong type)."""

    def check(value: object) -> Defect | None:
        if type(value) is enum_type:
            return None
        if type(value) is str:
            return Defect.UNKNOWN_ENUM_VALUE
        return Defect.WRONG_TYPE

    return check


def optional(inner: FieldCheck) -> FieldCheck:
    def check(value: object) -> Defect | None:
        return None if value is None else inner(value)

    return check


def or_blank(inner: FieldCheck) -> FieldCheck:
    """``""`` marks an upstream identity that could not be validated (docs/adr/0003)."""

    def blank_or(value: object) -> Defect | None:
        return None if type(value) is str and value == "" else inner(value)

    return blank_or


MAX_SEQUENCE = 4096


def tuple_of(inner: FieldCheck, *, non_empty: bool = False) -> FieldCheck:
    """An exact ``tuple`` whose items all pass ``inner``; order and duplicates are kept."""

    def check(value: object) -> Defect | None:
        if type(value) is not tuple:
            return Defect.SEQUENCE_NOT_TUPLE
        if len(value) > MAX_SEQUENCE:
            return Defect.SEQUENCE_TOO_LONG
        if non_empty and not value:
            return Defect.SEQUENCE_EMPTY
        for item in value:
            found = inner(item)
            if found is not None:
                return found
        return None

    return check


def version_pairs(value: object) -> Defect | None:
    """``((name, version), ...)``, names unique and ascending (ADR-0231 §7.3.22)."""
    if type(value) is not tuple:
        return Defect.SEQUENCE_NOT_TUPLE
    names: list[str] = []
    for pair in value:
        if type(pair) is not tuple or len(pair) != 2:
            return Defect.WRONG_TYPE
        name, pinned = pair
        found = code(name) or version(pinned)
        if found is not None:
            return found
        names.append(name)
    if names != sorted(set(names)):
        return Defect.PAIRS_NOT_SORTED_UNIQUE
    return None
