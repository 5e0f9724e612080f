"""Canonical bytes, digests, source spans and the record-validation vocabulary.

Every load-bearing identity in the kernel is the full lowercase SHA-256 of the bytes that
``canonical_json`` makes (ADR-0228 §10, ADR-0231 §14). Nothing else is ever hashed.

The hashable profile is narrower than what ``json.dumps`` accepts (docs/adr/0003): only exact
``str``, ``int``, ``bool``, ``None``, ``list``/``tuple`` and ``dict`` with exact-``str`` keys;
ints within +/-(2**53 - 1); strings without lone surrogates; bounded depth and size. Anything
else is a ``CanonicalizationError`` with a reason from the closed ``CanonicalReason`` set.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import re
import types
import typing
from collections.abc import Callable
from typing import Any, ClassVar

MAX_SAFE_INT = 2**53 - 1
MAX_DEPTH = 32
MAX_NODES = 100_000
MAX_TEXT_LENGTH = 100_000
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
DIGEST_LENGTH = 64

_VERSION_PATTERN = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*\.v[1-9][0-9]{0,5}")
_CODE_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,95}")


# --------------------------------------------------------------------------------------------
# Canonical JSON


class CanonicalReason(enum.Enum):
    """Why a value cannot be canonicalized (docs/adr/0003, hashable profile)."""

    UNSUPPORTED_TYPE = "unsupported_type"
    SUBCLASS_NOT_ALLOWED = "subclass_not_allowed"
    FLOAT_NOT_ALLOWED = "float_not_allowed"
    NON_FINITE_FLOAT = "non_finite_float"
    INT_OUT_OF_RANGE = "int_out_of_range"
    KEY_NOT_STR = "key_not_str"
    LONE_SURROGATE = "lone_surrogate"
    DEPTH_EXCEEDED = "depth_exceeded"
    SIZE_EXCEEDED = "size_exceeded"
    INVALID_UTF8 = "invalid_utf8"
    INVALID_JSON = "invalid_json"
    DUPLICATE_KEY = "duplicate_key"
    NOT_CANONICAL = "not_canonical"


class CanonicalizationError(ValueError):
    """The typed canonicalization refusal: a value outside the hashable profile."""

    def __init__(self, reason: CanonicalReason, where: str) -> None:
        super().__init__(f"{reason.value} at {where}")
        self.reason = reason
        self.where = where


def has_lone_surrogate(text: str) -> bool:
    """True when ``text`` holds a UTF-16 surrogate code point, which UTF-8 cannot encode."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _scalar_reason(value: object) -> CanonicalReason | None:
    kind = type(value)
    if kind is str:
        if len(value) > MAX_TEXT_LENGTH:  # type: ignore[arg-type]
            return CanonicalReason.SIZE_EXCEEDED
        if has_lone_surrogate(value):  # type: ignore[arg-type]
            return CanonicalReason.LONE_SURROGATE
        return None
    if kind is int:
        in_range = -MAX_SAFE_INT <= value <= MAX_SAFE_INT  # type: ignore[operator]
        return None if in_range else CanonicalReason.INT_OUT_OF_RANGE
    if kind is bool or value is None:
        return None
    if kind is float:
        finite = value == value and value not in (float("inf"), float("-inf"))
        return CanonicalReason.FLOAT_NOT_ALLOWED if finite else CanonicalReason.NON_FINITE_FLOAT
    if isinstance(value, (str, int, float, list, tuple, dict)):
        return CanonicalReason.SUBCLASS_NOT_ALLOWED
    return CanonicalReason.UNSUPPORTED_TYPE


def _first_violation(payload: object, with_paths: bool) -> tuple[CanonicalReason, str] | None:
    """Walk ``payload`` iteratively; paths are built only when asked, since they cost."""
    pending: list[tuple[object, int, str]] = [(payload, 0, "$")]
    nodes = 0
    while pending:
        value, depth, where = pending.pop()
        nodes += 1
        if nodes > MAX_NODES:
            return CanonicalReason.SIZE_EXCEEDED, where
        kind = type(value)
        if kind is dict:
            if depth >= MAX_DEPTH:
                return CanonicalReason.DEPTH_EXCEEDED, where
            for key, item in value.items():  # type: ignore[attr-defined]
                if type(key) is not str:
                    return CanonicalReason.KEY_NOT_STR, where
                reason = _scalar_reason(key)
                if reason is not None:
                    return reason, f"{where}.<key>"
                pending.append((item, depth + 1, f"{where}.{key}" if with_paths else where))
        elif kind is list or kind is tuple:
            if depth >= MAX_DEPTH:
                return CanonicalReason.DEPTH_EXCEEDED, where
            for index, item in enumerate(value):  # type: ignore[arg-type]
                pending.append((item, depth + 1, f"{where}[{index}]" if with_paths else where))
        else:
            reason = _scalar_reason(value)
            if reason is not None:
                return reason, where
    return None


def check_canonical(payload: object) -> None:
    """Raise ``CanonicalizationError`` unless ``payload`` is inside the hashable profile.

    The walk is iterative, so depth is an explicit cap rather than the interpreter's
    recursion limit, and a self-containing list ends at the cap instead of looping.
    """
    if _first_violation(payload, with_paths=False) is not None:
        reason, where = _first_violation(payload, with_paths=True)  # type: ignore[misc]
        raise CanonicalizationError(reason, where)


# The canonical encoding, in one place: these separators, keys sorted, text as
# ``json.dumps(ensure_ascii=False)`` writes it. ``dump_checked`` applies it to a whole payload;
# the record encoder below applies it part by part.
SEPARATORS = (",", ":")


def dump_checked(payload: object) -> bytes:
    """``canonical_json`` without the profile walk, for payloads built from records whose
    fields already passed their checks (each at least as strict as the profile)."""
    return json.dumps(payload, sort_keys=True, separators=SEPARATORS, ensure_ascii=False).encode(
        "utf-8"
    )


def canonical_json(payload: object) -> bytes:
    """The one function that makes canonical bytes (ADR-0228 §10)."""
    check_canonical(payload)
    return dump_checked(payload)


def sha256_digest(payload: object) -> str:
    """Full lowercase SHA-256 of ``canonical_json(payload)``."""
    return hashlib.sha256(canonical_json(payload)).hexdigest()


def _refuse_float(text: str) -> object:
    raise CanonicalizationError(CanonicalReason.FLOAT_NOT_ALLOWED, "$")


def _refuse_constant(text: str) -> object:
    raise CanonicalizationError(CanonicalReason.NON_FINITE_FLOAT, "$")


def _bounded_int(text: str) -> int:
    # Refuse on length before int() so a huge literal never reaches the conversion.
    if len(text.lstrip("-")) > 16:
        raise CanonicalizationError(CanonicalReason.INT_OUT_OF_RANGE, "$")
    value = int(text)
    if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        raise CanonicalizationError(CanonicalReason.INT_OUT_OF_RANGE, "$")
    return value


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            raise CanonicalizationError(CanonicalReason.DUPLICATE_KEY, f"$.{key}")
        result[key] = value
    return result


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r"[\[\]{}]")


def _nesting_depth(text: str) -> int:
    """The deepest bracket nesting outside strings, counted without recursion, so that the
    parser never meets input deeper than the cap (its own limit is the interpreter's stack)."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def decode_canonical(data: bytes) -> object:
    """Parse bytes that must already be canonical; the inverse of ``canonical_json``.

    UTF-8 is decoded strictly here, floats, NaN, duplicate keys and oversized ints are refused
    by the parser hooks, and re-encoding must give the input bytes exactly (docs/adr/0003).
    """
    if type(data) is not bytes:
        raise CanonicalizationError(CanonicalReason.UNSUPPORTED_TYPE, "$")
    if len(data) > MAX_DOCUMENT_BYTES:
        raise CanonicalizationError(CanonicalReason.SIZE_EXCEEDED, "$")
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise CanonicalizationError(CanonicalReason.INVALID_UTF8, "$") from None
    if _nesting_depth(text) > MAX_DEPTH:
        raise CanonicalizationError(CanonicalReason.DEPTH_EXCEEDED, "$")
    try:
        value = json.loads(
            text,
            parse_float=_refuse_float,
            parse_int=_bounded_int,
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique_keys,
        )
    except json.JSONDecodeError:
        raise CanonicalizationError(CanonicalReason.INVALID_JSON, "$") from None
    if canonical_json(value) != data:
        raise CanonicalizationError(CanonicalReason.NOT_CANONICAL, "$")
    return value


# --------------------------------------------------------------------------------------------
# Record validation vocabulary


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
    return check_int(value, minimum=0)


def positive_int(value: object) -> Defect | None:
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


_DIGEST_SHAPE = re.compile(f"[0-9a-f]{{{DIGEST_LENGTH}}}")


def is_digest(value: object) -> bool:
    return type(value) is str and _DIGEST_SHAPE.fullmatch(value) is not None


def digest(value: object) -> Defect | None:
    """A full lowercase SHA-256 hex digest: 64 characters of ``0-9a-f``."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if is_digest(value) else Defect.DIGEST_MALFORMED


def is_version(value: object) -> bool:
    return type(value) is str and _VERSION_PATTERN.fullmatch(value) is not None


def version(value: object) -> Defect | None:
    """A policy or schema version such as ``compute_budget.v1``."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if is_version(value) else Defect.VERSION_MALFORMED


def code(value: object) -> Defect | None:
    """A reason, blocker or obligation code: lowercase snake case, at most 96 characters."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if _CODE_PATTERN.fullmatch(value) else Defect.CODE_MALFORMED


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


def nested(record_type: type) -> FieldCheck:
    """A field holding another record, validated in full."""

    def check(value: object) -> Defect | None:
        if type(value) is record_type and _VALIDATED.get(id(value)) is value:
            return None  # trusted: the common case, answered without a call
        found = inspect_record(value, record_type)
        return None if found is None else found.defect

    return check


# --------------------------------------------------------------------------------------------
# Records


def _shared_value(value: object) -> tuple[object, object]:
    # A field value in JSON form (enums by value, tuples as lists, records as objects), with
    # prose and without; a nested record contributes its own remembered forms, shared.
    if type(value) in _PLAIN:
        return value, value
    if isinstance(value, Record):
        return _forms(value)
    if isinstance(value, enum.Enum):
        return value.value, value.value
    if type(value) is tuple or type(value) is list:
        pairs = [_shared_value(item) for item in value]
        full = [pair[0] for pair in pairs]
        if all(pair[0] is pair[1] for pair in pairs):
            return full, full
        return full, [pair[1] for pair in pairs]
    return value, value


_PLAIN = frozenset({str, int, bool, type(None)})


def _forms(record: Record) -> tuple[dict[str, Any], dict[str, Any]]:
    """The record's JSON form with prose and without, sharing every part that holds none:
    read, never mutated (``to_json`` hands out copies). Remembered while the memo trusts the
    record (docs/adr/0003)."""
    return remembered(record, _FORMS_KEY, lambda: _fields_forms(record))  # type: ignore[no-any-return]


_FORMS_KEY = "json_forms"


def _fields_forms(record: Record) -> tuple[dict[str, Any], dict[str, Any]]:
    full: dict[str, Any] = {}
    lean: dict[str, Any] = {}
    shared = True
    for name in _field_names(type(record)):
        full[name], lean_value = _shared_value(getattr(record, name))
        if name == "explanation":
            shared = False
        else:
            lean[name] = lean_value
            shared = shared and lean_value is full[name]
    return full, (full if shared else lean)


# Canonical bytes, built from the parts (docs/adr/0003): the one encoding of ``SEPARATORS``
# applied field by field. A record's bytes are its fields' bytes joined in key order, and a
# nested record contributes the bytes remembered for it, so each record is encoded once however
# many records hold it. The result is exactly ``dump_checked(to_json())``
# (``tests/cover/test_identity.py`` checks it on every record kind); only records whose fields
# passed their checks are encoded this way.
_encode_text = json.encoder.encode_basestring  # what ``json.dumps(ensure_ascii=False)`` uses
_COMMA, _COLON = (separator.encode("ascii") for separator in SEPARATORS)
_BYTES_KEY = "canonical_bytes"
_Piece = tuple[bytes, bytes, bytes, str]  # key and colon, value with prose, without, name
_KEYS: dict[type, tuple[tuple[str, bytes], ...]] = {}


def _keys_in_order(record_type: type) -> tuple[tuple[str, bytes], ...]:
    keys = _KEYS.get(record_type)
    if keys is None:
        names = sorted(_field_names(record_type))
        keys = tuple((name, _encode_text(name).encode("utf-8") + _COLON) for name in names)
        _KEYS[record_type] = keys
    return keys


def _value_bytes(value: object) -> tuple[bytes, bytes]:
    """A checked field value as canonical bytes, with prose and without (one object when
    they are equal)."""
    kind = type(value)
    if kind is str:
        text = _encode_text(value).encode("utf-8")
        return text, text
    if kind is int:
        number = int.__repr__(value).encode("ascii")  # type: ignore[arg-type]
        return number, number
    if value is None:
        return b"null", b"null"
    if kind is bool:
        return (b"true", b"true") if value else (b"false", b"false")
    if isinstance(value, Record):
        return _record_bytes(value)
    if isinstance(value, enum.Enum):
        return _enum_bytes(value)
    if kind is tuple or kind is list:
        if not value:
            return b"[]", b"[]"
        pairs = [_value_bytes(item) for item in value]  # type: ignore[attr-defined]
        full = b"[" + _COMMA.join([pair[0] for pair in pairs]) + b"]"
        for pair in pairs:
            if pair[0] is not pair[1]:
                return full, b"[" + _COMMA.join([pair[1] for pair in pairs]) + b"]"
        return full, full
    raise CanonicalizationError(CanonicalReason.UNSUPPORTED_TYPE, "$")


# Enum members are few and immutable: each one's bytes are encoded once, found by identity
# (an enum's ``__hash__`` is Python code). The member is kept beside its bytes, so its id
# cannot be reused while the entry exists.
_ENUM_BYTES: dict[int, tuple[enum.Enum, tuple[bytes, bytes]]] = {}


def _enum_bytes(member: enum.Enum) -> tuple[bytes, bytes]:
    found = _ENUM_BYTES.get(id(member))
    if found is None or found[0] is not member:
        found = _ENUM_BYTES[id(member)] = (member, _value_bytes(member.value))
    return found[1]


def _record_pieces(record: Record) -> list[_Piece]:
    pieces = []
    for name, key in _keys_in_order(type(record)):
        value = getattr(record, name)
        kind = type(value)
        # The most common fields are encoded here, without a call.
        if kind is str:
            text = _encode_text(value).encode("utf-8")
            pieces.append((key, text, text, name))
        elif kind is int:
            number = int.__repr__(value).encode("ascii")
            pieces.append((key, number, number, name))
        else:
            full, lean = _value_bytes(value)
            pieces.append((key, full, lean, name))
    return pieces


def _joined(
    pieces: list[_Piece], replaced: str | None = None, replacement: bytes = b""
) -> tuple[bytes, bytes]:
    """The record's bytes from its pieces, with prose and without; the field named
    ``replaced`` (a new record's id) takes ``replacement`` as its value."""
    full: list[bytes] = []
    lean: list[bytes] = []
    same = True
    for key, value, lean_value, name in pieces:
        if name == replaced:
            value = lean_value = replacement
        with_key = key + value
        full.append(with_key)
        if name == "explanation":
            same = False
        elif lean_value is value:
            lean.append(with_key)
        else:
            lean.append(key + lean_value)
            same = False
    encoded = b"{" + _COMMA.join(full) + b"}"
    return (encoded, encoded) if same else (encoded, b"{" + _COMMA.join(lean) + b"}")


def _encoded(record: Record) -> tuple[bytes, bytes]:
    """``_joined(_record_pieces(record))``, spans by a template (they are most records)."""
    if type(record) is SourceSpan:
        # The most numerous record: four checked fields, keys in order, no prose.
        encoded = _SPAN_TEMPLATE % (
            record.end,
            record.sentence_index,
            record.start,
            _encode_text(record.text).encode("utf-8"),
        )
        return encoded, encoded
    return _joined(_record_pieces(record))


_SPAN_TEMPLATE = b'{"end":%d,"sentence_index":%d,"start":%d,"text":%b}'


def _record_bytes(record: Record) -> tuple[bytes, bytes]:
    """``dump_checked`` of the record's JSON form with prose and without, remembered."""
    if _VALIDATED.get(id(record)) is record:  # ``remembered``'s first look, without a call
        found = _REMEMBERED.get((id(record), _BYTES_KEY))
        if found is not None:
            return found  # type: ignore[no-any-return]
    return remembered(record, _BYTES_KEY, lambda: _encoded(record))  # type: ignore[no-any-return]


def _identity_bytes(record: Record, pieces: list[_Piece]) -> bytes:
    """The canonical bytes of ``record.identity_payload()``."""
    left_out = record._identity_excluded()
    id_field = record.ID_FIELD
    parts = []
    for key, _, lean, name in pieces:
        if name == "explanation" or name in left_out:
            continue
        if name == id_field:
            if record.SELF_SEALED:
                parts.append(key + b'""')
            continue
        parts.append(key + lean)
    return b"{" + _COMMA.join(parts) + b"}"


def _copied(value: object) -> object:
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list:
        return [_copied(item) for item in value]
    return value


class Record:
    """Base of every kernel record: a frozen, slotted dataclass that validates on construction.

    ``SCHEMA`` lists each field with its check; ``_cross_check`` adds the rules that span
    fields. Stage functions call ``inspect_record`` again on what they are given, because a
    value that arrives from outside may be of another type or may have been altered with
    ``object.__setattr__``; either way the stage answers with a typed refusal, not an
    exception.
    """

    __slots__ = ()
    SCHEMA: ClassVar[tuple[tuple[str, FieldCheck], ...]] = ()
    ID_FIELD: ClassVar[str | None] = None
    SELF_SEALED: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # ``dataclass(slots=True)`` builds a second class with the slots; guard that one.
        if cls.__dict__.get("__slots__") and "__dataclass_fields__" in cls.__dict__:
            _guard_fields(cls)

    def __post_init__(self) -> None:
        generation = _memo_generation()
        found = self.find_defect()
        if found is not None:
            raise RecordError(found)
        _remember_valid(self, generation)

    def find_defect(self, *, check_identity: bool = True) -> RecordDefect | None:
        name = type(self).__name__
        for field_name, check in self.SCHEMA:
            found = check(getattr(self, field_name))
            if found is not None:
                return RecordDefect(name, field_name, found)
        try:
            cross = self._cross_check()
            if cross is None and check_identity and self.ID_FIELD is not None:
                if getattr(self, self.ID_FIELD) != self._checked_id():
                    cross = (self.ID_FIELD, Defect.IDENTITY_MISMATCH)
        except CanonicalizationError:
            cross = ("$", Defect.NOT_CANONICAL)
        return None if cross is None else RecordDefect(name, cross[0], cross[1])

    def _cross_check(self) -> tuple[str, Defect] | None:
        return None

    def to_json(self, *, drop_explanations: bool = False) -> dict[str, Any]:
        """Every field in JSON form; with ``drop_explanations`` prose leaves at every depth."""
        return _copied(_forms(self)[drop_explanations])  # type: ignore[return-value]

    def identity_payload(self) -> dict[str, Any]:
        """What the record's own identity hashes: every field but prose and those
        ``_identity_excluded`` names, its id blanked (a self-seal, docs/adr/0003) or, where
        ``SELF_SEALED`` is false, left out."""
        payload = _copied(_forms(self)[1])
        assert type(payload) is dict
        for name in self._identity_excluded():
            del payload[name]
        if self.ID_FIELD is not None:
            if self.SELF_SEALED:
                payload[self.ID_FIELD] = ""
            else:
                del payload[self.ID_FIELD]
        return payload

    def _identity_excluded(self) -> frozenset[str]:
        # The one place a record kind leaves further fields out of its identity.
        return frozenset()

    def canonical_bytes(self, *, drop_explanations: bool = False) -> bytes:
        """The canonical JSON of ``to_json(drop_explanations=...)``. A record the validation
        memo trusts skips the profile walk, its field checks being at least as strict; any
        other goes through ``canonical_json``, which refuses what is outside the profile."""
        if _is_trusted(self):
            return _record_bytes(self)[drop_explanations]
        return canonical_json(_forms(self)[drop_explanations])

    def content_digest(self, *, drop_explanations: bool = False) -> str:
        """SHA-256 of ``canonical_bytes``: the identity of a record that has no id field."""
        return hashlib.sha256(self.canonical_bytes(drop_explanations=drop_explanations)).hexdigest()

    def compute_id(self) -> str:
        return sha256_digest(self.identity_payload())

    def _checked_id(self) -> str:
        """``compute_id`` for a record whose fields already passed ``SCHEMA`` and
        ``_cross_check``: every field check is at least as strict as the hashable profile
        (exact types, safe ints, no lone surrogates, bounded nesting), so the profile walk
        is not repeated. ``tests/cover/test_identity.py`` samples the claim."""
        return hashlib.sha256(_identity_bytes(self, _record_pieces(self))).hexdigest()

    @classmethod
    def sealed(cls, **fields: Any) -> Any:
        """Construct the record with its identity field computed from the other fields.

        The fields are validated first (with a placeholder id), then hashed once; going
        through ``__init__`` would hash them a second time only to compare.
        """
        assert cls.ID_FIELD is not None
        record = object.__new__(cls)
        # A new record is not remembered, so its slots are written directly, unguarded.
        for name, default, write in _field_defaults(cls):
            if name in fields:
                value = fields.pop(name)
            elif default is not dataclasses.MISSING:
                value = default
            elif name == cls.ID_FIELD:
                value = "0" * DIGEST_LENGTH
            else:
                raise TypeError(f"{cls.__name__}.sealed() needs {name}")
            write(record, value)
        if fields:
            raise TypeError(f"{cls.__name__}.sealed() got unknown fields {sorted(fields)}")
        generation = _memo_generation()
        found = record.find_defect(check_identity=False)
        if found is not None:
            raise RecordError(found)
        # The parts encoded to hash the record are kept as its bytes, the id written in.
        pieces = _record_pieces(record)
        identity = hashlib.sha256(_identity_bytes(record, pieces)).hexdigest()
        _SLOT_WRITERS[cls][cls.ID_FIELD](record, identity)
        _remember_valid(record, generation, _joined(pieces, cls.ID_FIELD, f'"{identity}"'.encode()))
        return record


def inspect_record(value: object, record_type: type) -> RecordDefect | None:
    """The first defect of ``value`` as a ``record_type``, or ``None`` when it is well formed."""
    if type(value) is not record_type:
        return RecordDefect(record_type.__name__, "$", Defect.WRONG_RECORD_TYPE)
    if _is_trusted(value):
        return None
    generation = _memo_generation()
    try:
        found = value.find_defect()  # type: ignore[attr-defined]
    except AttributeError:  # a slot emptied by tampering
        return RecordDefect(record_type.__name__, "$", Defect.WRONG_TYPE)
    if found is None:
        _remember_valid(value, generation)  # type: ignore[arg-type]
    return found


def checked_canonical_bytes(value: object, record_type: type) -> bytes:
    """The canonical bytes of ``value`` (every field, prose included) once it inspects clean
    as a ``record_type``; raises ``RecordError`` otherwise."""
    found = inspect_record(value, record_type)
    if found is not None:
        raise RecordError(found)
    return _record_bytes(value)[0]  # type: ignore[arg-type]


# Validation memo (docs/adr/0003, "Validation memo"). Every stage re-inspects what it is
# given, so the same record is validated many times along one case; validating means hashing.
# A record that passed is remembered, and trusted while it stays remembered. Records are
# frozen, and every field of every record is guarded (``_guard_fields``): writing over a field
# of a remembered record, the way ``object.__setattr__`` tampers, or deleting one, forgets
# everything remembered. The memo only ever remembers a record whose nested records are all
# remembered too (``_remember_valid`` refuses one whose validation saw the memo emptied), so
# trusting a record trusts everything in it. Entries hold strong references, so an id cannot
# be reused while remembered; the memo is bounded and simply emptied when full. It changes no
# result, only how often a result is computed.
_MEMO_LIMIT = 1 << 13
_VALIDATED: dict[int, Record] = {}
_REMEMBERED: dict[tuple[int, str], object] = {}
_GENERATION = [0]
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _field_names(record_type: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(record_type)
    if names is None:
        names = tuple(field.name for field in dataclasses.fields(record_type))  # type: ignore[arg-type]
        _FIELD_NAMES[record_type] = names
    return names


_FIELD_DEFAULTS: dict[type, tuple[tuple[str, object, Callable[[Any, object], None]], ...]] = {}
# Each guarded slot's own setter, for records under construction only.
_SLOT_WRITERS: dict[type, dict[str, Callable[[Any, object], None]]] = {}


def _field_defaults(
    record_type: type,
) -> tuple[tuple[str, object, Callable[[Any, object], None]], ...]:
    found = _FIELD_DEFAULTS.get(record_type)
    if found is None:
        writers = _SLOT_WRITERS[record_type]
        fields = dataclasses.fields(record_type)  # type: ignore[arg-type]
        found = tuple((field.name, field.default, writers[field.name]) for field in fields)
        _FIELD_DEFAULTS[record_type] = found
    return found


def _memo_generation() -> int:
    return _GENERATION[0]


def _forget_everything() -> None:
    _VALIDATED.clear()
    _REMEMBERED.clear()
    _GENERATION[0] += 1


def _is_trusted(record: object) -> bool:
    return _VALIDATED.get(id(record)) is record


def _remember_valid(record: Record, generation: int, encoded: object = None) -> None:
    """Remember a record that just passed validation, begun at ``generation`` (and its
    canonical bytes, when they were built on the way). If the memo was emptied meanwhile, a record
    nested in it may have been forgotten (and could then change unseen), so the record is
    not remembered either."""
    if generation != _GENERATION[0]:
        return
    if len(_VALIDATED) >= _MEMO_LIMIT:
        _forget_everything()
        return
    _VALIDATED[id(record)] = record
    if encoded is not None:
        _REMEMBERED[(id(record), _BYTES_KEY)] = encoded


def remembered(record: Record, key: str, compute: Callable[[], Any]) -> Any:
    """``compute()``, a pure function of ``record``, remembered under ``key`` while the memo
    trusts the record. Kept only if nothing was forgotten while it was computed, so a record
    in the result is itself remembered and guarded. The same as computing it again."""
    if _VALIDATED.get(id(record)) is not record:
        return compute()
    found = _REMEMBERED.get((id(record), key), _NOT_REMEMBERED)
    if found is not _NOT_REMEMBERED:
        return found
    generation = _GENERATION[0]
    value = compute()
    if generation == _GENERATION[0]:
        _REMEMBERED[(id(record), key)] = value
    return value


_NOT_REMEMBERED = object()


def _guard_fields(record_type: type) -> None:
    """Replace each slot of ``record_type`` by a property that reads it unchanged and, on a
    write over a remembered record or a deletion from one, forgets everything first. Writes
    into a new record (construction) cost one lookup."""
    writers = _SLOT_WRITERS[record_type] = {}
    for name in _field_names(record_type):
        slot = record_type.__dict__[name]
        writers[name] = slot.__set__

        def write(record: Record, value: object, put: Any = slot.__set__) -> None:
            if _VALIDATED.get(id(record)) is record:
                _forget_everything()
            put(record, value)

        def delete(record: Record, remove: Any = slot.__delete__) -> None:
            if _VALIDATED.get(id(record)) is record:
                _forget_everything()
            remove(record)

        setattr(record_type, name, property(slot.__get__, write, delete))


# --------------------------------------------------------------------------------------------
# Source spans


@dataclasses.dataclass(frozen=True, slots=True)
class SourceSpan(Record):
    """An exact slice of the source text; offsets count Unicode code points (docs/adr/0003).

    Well formed when ``0 <= start < end``, ``end - start == len(text)``, the ints are real
    ints, the text holds no lone surrogate and ``sentence_index >= 0``.
    """

    text: str
    start: int
    end: int
    sentence_index: int

    SCHEMA: ClassVar = (
        ("text", text),
        ("start", non_negative_int),
        ("end", non_negative_int),
        ("sentence_index", non_negative_int),
    )

    def find_defect(self) -> RecordDefect | None:
        # Spans are the most numerous records: a well-formed one is recognised in one
        # expression, and anything else goes through the field checks for its exact defect.
        text_value, start, end, index = self.text, self.start, self.end, self.sentence_index
        if (
            type(text_value) is str
            and type(start) is int
            and type(end) is int
            and type(index) is int
            and 0 <= start < end <= MAX_SAFE_INT
            and 0 <= index <= MAX_SAFE_INT
            and end - start == len(text_value) <= MAX_TEXT_LENGTH
            and not has_lone_surrogate(text_value)
        ):
            return None
        for field_name, check in self.SCHEMA:
            found = check(getattr(self, field_name))
            if found is not None:
                if found is Defect.NEGATIVE_VALUE:
                    found = _NEGATIVE_SPAN_FIELD[field_name]
                return RecordDefect("SourceSpan", field_name, found)
        if self.start >= self.end:
            return RecordDefect("SourceSpan", "end", Defect.SPAN_EMPTY_OR_INVERTED)
        if self.end - self.start != len(self.text):
            return RecordDefect("SourceSpan", "text", Defect.SPAN_LENGTH_MISMATCH)
        return None


# A negative end with a valid start is an inverted span, not a negative start.
_NEGATIVE_SPAN_FIELD = {
    "start": Defect.SPAN_START_NEGATIVE,
    "end": Defect.SPAN_EMPTY_OR_INVERTED,
    "sentence_index": Defect.SPAN_SENTENCE_INDEX_NEGATIVE,
}

span_check = nested(SourceSpan)
spans_check = tuple_of(span_check)


def span_in_source(span: SourceSpan, source_text: str) -> bool:
    """The span's text is exactly the source at its offsets."""
    return source_text[span.start : span.end] == span.text


# --------------------------------------------------------------------------------------------
# Stage refusals


class Stage(enum.Enum):
    """Stages whose malformed input ends in a ``StageRefusal`` (the gate, budget and run
    have refusal shapes of their own, fixed by their ADRs)."""

    ASSESSMENT = "assessment"
    PROOF = "proof"
    RESIDUAL = "residual"
    LOOP = "loop"


@dataclasses.dataclass(frozen=True, slots=True)
class StageRefusal(Record):
    """A typed refusal: the stage, what it could identify without guessing, and closed codes.

    ``reason_codes[0]`` is the stage's reason; a second code, when present, is the
    ``Defect`` that caused it.
    """

    refusal_id: str
    stage: Stage
    subject_digest: str | None
    reason_codes: tuple[str, ...]
    explanation: str

    ID_FIELD: ClassVar = "refusal_id"
    SCHEMA: ClassVar = (
        ("refusal_id", digest),
        ("stage", member_of(Stage)),
        ("subject_digest", optional(digest)),
        ("reason_codes", tuple_of(code, non_empty=True)),
        ("explanation", text),
    )


def refuse(
    stage: Stage,
    reason: str,
    *,
    subject_digest: str | None = None,
    found: RecordDefect | None = None,
    explanation: str = "",
) -> StageRefusal:
    """Build a ``StageRefusal``; a defect adds its code and its place to the explanation."""
    codes = (reason,) if found is None else (reason, found.defect.value)
    detail = explanation or reason.replace("_", " ")
    if found is not None:
        detail = f"{detail} ({found.describe()})"
    return StageRefusal.sealed(
        stage=stage,
        subject_digest=subject_digest,
        reason_codes=codes,
        explanation=detail,
    )


# --------------------------------------------------------------------------------------------
# Rebuilding records from their JSON form


def _decode_value(hint: Any, value: object, where: str) -> object:
    """``value`` (decoded JSON) as the type ``hint`` names; ``TypeError`` when it cannot be."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        others = [option for option in options if option is not type(None)]
        if len(others) == 1:
            return _decode_value(others[0], value, where)
        # Record types in one union are told apart by their identity field; no two share one.
        for record_type in others:
            if type(value) is dict and getattr(record_type, "ID_FIELD", None) in value:
                return record_from_json(record_type, value)
        raise TypeError(f"{where}: no type of {hint} fits")
    if origin is tuple:
        if type(value) is not list:
            raise TypeError(f"{where}: expected a list")
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode_value(args[0], item, f"{where}[]") for item in value)
        if len(args) != len(value):
            raise TypeError(f"{where}: expected {len(args)} items")
        return tuple(
            _decode_value(a, item, f"{where}[]") for a, item in zip(args, value, strict=True)
        )
    if isinstance(hint, type) and issubclass(hint, Record):
        return record_from_json(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if type(value) is not str:
            raise TypeError(f"{where}: expected an enum value")
        return hint(value)
    if hint in (str, int, bool):
        if type(value) is not hint:
            raise TypeError(f"{where}: expected {hint.__name__}")
        return value
    raise TypeError(f"{where}: unsupported type {hint}")


_TYPE_HINTS: dict[type, dict[str, Any]] = {}


def record_from_json(record_type: type, value: object) -> Any:
    """Rebuild a record from ``to_json()`` output, validating it on construction.

    Exactly the record's fields must be present; enum values must be known; every nested
    record is rebuilt and validated too. Raises ``TypeError``, ``ValueError`` or
    ``RecordError``; callers turn them into a typed refusal.
    """
    if type(value) is not dict:
        raise TypeError(f"{record_type.__name__}: expected an object")
    hints = _TYPE_HINTS.get(record_type)
    if hints is None:
        hints = _TYPE_HINTS[record_type] = typing.get_type_hints(record_type)
    names = [field.name for field in dataclasses.fields(record_type)]
    if set(value) != set(names):
        raise TypeError(f"{record_type.__name__}: fields {sorted(set(value) ^ set(names))}")
    return record_type(
        **{
            name: _decode_value(hints[name], value[name], f"{record_type.__name__}.{name}")
            for name in names
        }
    )
