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
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from . import compiled_kinds

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


# A string: from a quote outside strings to the next unescaped quote, or to the end of the
# text when none closes it (the parser refuses it there). Possessive and DOTALL, so every
# character is read once and nothing backtracks: linear in the text (issue 15; the pattern
# without them rescanned to the end for every escaped quote of an unclosed string).
_JSON_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"?', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


def _nesting_depth(text: str) -> int:
    """The deepest bracket nesting outside strings, counted without recursion, so that the
    parser never meets input deeper than the cap (its own limit is the interpreter's stack).

    Linear in ``len(text)`` (docs/adr/0003, "Reading bytes back"). Strings are read as the
    parser reads them, up to the point where it would refuse them, so no prefix of the text
    the parser accepts is counted shallower than the parser nests it.
    """
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_JSON_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
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

# A check's accept test (docs/adr/0003, "Compiled record kinds"): a Python expression over
# ``{v}`` that is true only for values the check accepts, with the names it needs. A record
# kind's generated ``find_defect`` evaluates it inline and calls the check itself only when it
# is false, so the defect reported is always the check's own.
_ACCEPT_TESTS: dict[FieldCheck, tuple[str, dict[str, object]]] = {}


def _accepts(check: FieldCheck, test: str, **names: object) -> FieldCheck:
    _ACCEPT_TESTS[check] = (test, names)
    return check


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


_accepts(flag, "type({v}) is bool")
_accepts(non_negative_int, "(type({v}) is int and 0 <= {v} <= _MAX_SAFE_INT)")
_accepts(positive_int, "(type({v}) is int and 1 <= {v} <= _MAX_SAFE_INT)")


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


_TEXT_TEST = "(type({v}) is str and len({v}) <= _MAX_TEXT_LENGTH and ({v}.isascii() or not _has_lone_surrogate({v})))"
_accepts(text, _TEXT_TEST)
_accepts(label, f"({_TEXT_TEST} and {{v}} != '')")


_DIGEST_SHAPE = re.compile(f"[0-9a-f]{{{DIGEST_LENGTH}}}")


class _Shape:
    """Whether a string fully matches ``pattern``, remembering the strings that did. One
    digest or code is checked in record after record along a case, and a set lookup (a
    string's hash is cached) costs less than matching again; strings cannot change."""

    __slots__ = ("_fullmatch", "seen")

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self._fullmatch = pattern.fullmatch
        self.seen: set[str] = set()

    def __call__(self, value: str) -> bool:
        if value in self.seen:
            return True
        if self._fullmatch(value) is None:
            return False
        if len(self.seen) >= _SEEN_LIMIT:
            self.seen.clear()
        self.seen.add(value)
        return True


_SEEN_LIMIT = 1 << 13
_DIGEST = _Shape(_DIGEST_SHAPE)
_VERSION = _Shape(_VERSION_PATTERN)
_CODE = _Shape(_CODE_PATTERN)


def is_digest(value: object) -> bool:
    return type(value) is str and _DIGEST(value)


def digest(value: object) -> Defect | None:
    """A full lowercase SHA-256 hex digest: 64 characters of ``0-9a-f``."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if is_digest(value) else Defect.DIGEST_MALFORMED


def is_version(value: object) -> bool:
    return type(value) is str and _VERSION(value)


def version(value: object) -> Defect | None:
    """A policy or schema version such as ``compute_budget.v1``."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if is_version(value) else Defect.VERSION_MALFORMED


def code(value: object) -> Defect | None:
    """A reason, blocker or obligation code: lowercase snake case, at most 96 characters."""
    if type(value) is not str:
        return Defect.WRONG_TYPE
    return None if _CODE(value) else Defect.CODE_MALFORMED


_accepts(digest, "(type({v}) is str and ({v} in _digests_seen or _digest_shape({v})))")
_accepts(version, "(type({v}) is str and ({v} in _versions_seen or _version_shape({v})))")
_accepts(code, "(type({v}) is str and ({v} in _codes_seen or _code_shape({v})))")


def exactly(*supported: str) -> FieldCheck:
    """A field pinned to supported values, such as a schema version."""

    def check(value: object) -> Defect | None:
        if type(value) is not str:
            return Defect.WRONG_TYPE
        if value in supported:
            return None
        return Defect.VERSION_UNSUPPORTED if is_version(value) else Defect.VERSION_MALFORMED

    return _accepts(check, "(type({v}) is str and {v} in {supported})", supported=supported)


def member_of(enum_type: type[enum.Enum]) -> FieldCheck:
    """An exact member of a closed enum (a bare string is the wrong type)."""

    def check(value: object) -> Defect | None:
        if type(value) is enum_type:
            return None
        if type(value) is str:
            return Defect.UNKNOWN_ENUM_VALUE
        return Defect.WRONG_TYPE

    return _accepts(check, "(type({v}) is {member_type})", member_type=enum_type)


def optional(inner: FieldCheck) -> FieldCheck:
    def check(value: object) -> Defect | None:
        return None if value is None else inner(value)

    if inner not in _ACCEPT_TESTS:
        return check
    test, names = _ACCEPT_TESTS[inner]
    return _accepts(check, f"({{v}} is None or {test})", **names)


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


def nested(record_type: type) -> FieldCheck:
    """A field holding another record, validated in full."""

    def check(value: object) -> Defect | None:
        if type(value) is record_type and _VALIDATED.get(id(value)) is value:
            return None  # trusted: the common case, answered without a call
        found = inspect_record(value, record_type)
        return None if found is None else found.defect

    return _accepts(
        check, "(type({v}) is {nested_type} and _VALIDATED.get(id({v})) is {v})", nested_type=record_type
    )


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
    if kind is tuple:
        return _tuple_bytes(value)  # type: ignore[arg-type]
    if kind is list:
        if not value:
            return b"[]", b"[]"
        pairs = [_value_bytes(item) for item in value]  # type: ignore[attr-defined]
        full = b"[" + _COMMA.join([pair[0] for pair in pairs]) + b"]"
        for pair in pairs:
            if pair[0] is not pair[1]:
                return full, b"[" + _COMMA.join([pair[1] for pair in pairs]) + b"]"
        return full, full
    raise CanonicalizationError(CanonicalReason.UNSUPPORTED_TYPE, "$")


def _tuple_bytes(items: tuple[object, ...]) -> tuple[bytes, bytes]:
    """A checked tuple as canonical bytes, with prose and without. A tuple that cannot change
    is remembered by identity: one of exact strings, ints, bools, ``None``, remembered tuples
    and records the memo trusts (which cannot change while trusted; forgetting them forgets
    this too, ``_forget_everything``). Evidence tuples are handed on unchanged from stage to
    stage, and version tables are constants, so each is encoded once."""
    found = _TUPLE_BYTES.get(id(items))
    if found is not None and found[0] is items:
        return found[1]
    if not items:
        return _EMPTY_PAIR
    generation = _GENERATION[0]
    unchanging = True
    fulls, leans = [], []
    same = True
    for item in items:
        kind = type(item)
        if kind is str:
            text = _encode_text(item).encode("utf-8")
            pair = (text, text)
        elif _VALIDATED.get(id(item)) is item:
            pair = _BYTES.get(id(item)) or _record_bytes(item)  # type: ignore[arg-type]
        else:
            pair = _value_bytes(item)
            if kind is tuple:
                unchanging = unchanging and (not item or id(item) in _TUPLE_BYTES)
            elif kind is not int and kind is not bool and item is not None:
                unchanging = False
        fulls.append(pair[0])
        leans.append(pair[1])
        if pair[0] is not pair[1]:
            same = False
    full = b"[" + _COMMA.join(fulls) + b"]"
    encoded = (full, full) if same else (full, b"[" + _COMMA.join(leans) + b"]")
    if unchanging and generation == _GENERATION[0]:
        if len(_TUPLE_BYTES) >= _MEMO_LIMIT:
            _forget_everything()
        else:
            _TUPLE_BYTES[id(items)] = (items, encoded)
    return encoded


_EMPTY_PAIR = (b"[]", b"[]")


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
    """``_joined(_record_pieces(record))``: spans by a template (they are most records), any
    other kind by its generated encoder, the generic walk only where that declines."""
    if type(record) is SourceSpan:
        # The most numerous record: four checked fields, keys in order, no prose.
        encoded = _SPAN_TEMPLATE % (
            record.end,
            record.sentence_index,
            record.start,
            _encode_text(record.text).encode("utf-8"),
        )
        return encoded, encoded
    encoders = _ENCODERS.get(type(record)) or _kind_encoders(type(record))
    found = encoders.encode(record)
    return found if found is not None else _joined(_record_pieces(record))


_SPAN_TEMPLATE = b'{"end":%d,"sentence_index":%d,"start":%d,"text":%b}'


def _validated_bytes(record: Record) -> tuple[bytes, bytes] | None:
    """The bytes of a record that just passed its checks (``None`` leaves them to be built,
    and refused, on first use)."""
    try:
        return _encoded(record)
    except CanonicalizationError:  # a kind whose checks admit more than the profile
        return None


def _record_bytes(record: Record) -> tuple[bytes, bytes]:
    """``dump_checked`` of the record's JSON form with prose and without, remembered while
    the memo trusts the record."""
    key = id(record)
    found = _BYTES.get(key)
    if found is not None:
        return found
    generation = _GENERATION[0]
    encoded = _encoded(record)
    if generation == _GENERATION[0] and _VALIDATED.get(key) is record:
        _BYTES[key] = encoded
    return encoded


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


# Per-kind encoders (docs/adr/0003, "Compiled record kinds"; docs/adr/0011). For each kind,
# source is generated for ``encode`` (the bytes with prose and without) and, for a kind with
# an id, ``seal`` (the identity payload hashed, then both forms with the id written in). Each
# reads every field, confirms it holds the exact type its annotation names, and fills fixed
# byte templates with no loop over fields. A value of any other type makes it decline
# (``None``) and the generic walk above answers, so a template only ever encodes what the walk
# would encode the same way (``tests/cover/test_compiled_kinds.py``). The identity template
# follows the kind's ``IDENTITY_EXCLUDED``; a kind that overrides ``_identity_excluded`` (its
# exclusions depend on values, or a test plants a change) is always sealed by the walk.
@dataclasses.dataclass(frozen=True, slots=True)
class _KindEncoders:
    encode: Callable[[Any], tuple[bytes, bytes] | None]
    seal: Callable[[Any], tuple[str, tuple[bytes, bytes]] | None]


_ENCODERS: dict[type, _KindEncoders] = {}
_NULL_PAIR = (b"null", b"null")


def _hint_kind(hint: Any) -> tuple[str, type | None]:
    """How a field of type ``hint`` is encoded without a call, or ``generic``."""
    if hint is str or hint is int or hint is bool:
        return hint.__name__, None
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        others = [option for option in typing.get_args(hint) if option is not type(None)]
        if len(others) == 1 and len(typing.get_args(hint)) == 2:
            kind, of = _hint_kind(others[0])
            if kind in ("str", "int", "enum", "record"):
                return "optional_" + kind, of
        return "generic", None
    if isinstance(hint, type) and issubclass(hint, Record):
        return "record", hint
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return "enum", hint
    if typing.get_origin(hint) is tuple:
        return "tuple", None
    return "generic", None


# Per kind: the exact-type test, and the expression for the value's bytes (``%d`` takes an
# int itself) or, for values that may hold prose, for its (with, without) pair.
_KIND_TEST = {
    "str": "type({v}) is str",
    "int": "type({v}) is int",
    "bool": "type({v}) is bool",
    "enum": "type({v}) is {t}",
    "record": "type({v}) is {t}",
    "optional_str": "({v} is None or type({v}) is str)",
    "optional_int": "({v} is None or type({v}) is int)",
    "optional_enum": "({v} is None or type({v}) is {t})",
    "optional_record": "({v} is None or type({v}) is {t})",
    "tuple": "type({v}) is tuple",
}
_KIND_BYTES = {
    "str": "_encode_text({v}).encode('utf-8')",
    "int": "{v}",
    "bool": "(b'true' if {v} else b'false')",
    "enum": "_enum_bytes({v})[0]",
    "optional_str": "(b'null' if {v} is None else _encode_text({v}).encode('utf-8'))",
    "optional_int": "(b'null' if {v} is None else b'%d' % {v})",
    "optional_enum": "(b'null' if {v} is None else _enum_bytes({v})[0])",
}
_KIND_PAIR = {
    "record": "(_BYTES.get(id({v})) or _record_bytes({v}))",
    "optional_record": "(_NULL_PAIR if {v} is None else _BYTES.get(id({v})) or _record_bytes({v}))",
    "tuple": "_tuple_bytes({v})",
    "generic": "_value_bytes({v})",
}


def _kind_encoders(record_type: type) -> _KindEncoders:
    try:
        hints = typing.get_type_hints(record_type)
    except NameError:  # a kind whose annotations name what its module cannot see
        hints = {}
    names = sorted(_field_names(record_type))
    id_field = record_type.ID_FIELD  # type: ignore[attr-defined]
    left_out = record_type.IDENTITY_EXCLUDED  # type: ignore[attr-defined]
    namespace: dict[str, Any] = {
        "_encode_text": _encode_text,
        "_enum_bytes": _enum_bytes,
        "_record_bytes": _record_bytes,
        "_BYTES": _BYTES,
        "_value_bytes": _value_bytes,
        "_tuple_bytes": _tuple_bytes,
        "_NULL_PAIR": _NULL_PAIR,
        "_sha256": hashlib.sha256,
    }
    reads, tests, values = [], [], {}
    full_keys, lean_keys, identity_keys = [], [], []
    full_args, lean_args, identity_args = [], [], []
    pairs = []
    for index, name in enumerate(names):
        kind, of = _hint_kind(hints.get(name))
        value, type_name = f"v{index}", f"t{index}"
        if of is not None:
            namespace[type_name] = of
        reads.append(f"    {value} = record.{name}\n")
        if kind in _KIND_TEST:
            tests.append(_KIND_TEST[kind].format(v=value, t=type_name))
        key = (_encode_text(name).encode("utf-8") + _COLON).replace(b"%", b"%%")
        slot = key + (b"%d" if kind == "int" else b"%b")
        if kind in _KIND_PAIR:
            values[index] = f"    p{index} = {_KIND_PAIR[kind].format(v=value)}\n"
            full, lean = f"p{index}[0]", f"p{index}[1]"
            pairs.append(index)
        elif kind == "int":
            full = lean = value  # ``%d`` writes the int itself
        else:
            values[index] = f"    b{index} = {_KIND_BYTES[kind].format(v=value)}\n"
            full = lean = f"b{index}"
        full_keys.append(slot)
        full_args.append(full)
        if name == "explanation":
            continue
        lean_keys.append(slot)
        lean_args.append(lean)
        if name == id_field:
            if record_type.SELF_SEALED:  # type: ignore[attr-defined]
                identity_keys.append(key + b'""')
        elif name not in left_out:
            identity_keys.append(slot)
            identity_args.append(lean)
    namespace["FULL"] = b"{" + _COMMA.join(full_keys) + b"}"
    namespace["LEAN"] = b"{" + _COMMA.join(lean_keys) + b"}"
    namespace["IDENTITY"] = b"{" + _COMMA.join(identity_keys) + b"}"

    def function(name: str, encoded: Iterable[int], body: str) -> str:
        # Every field is read and type-tested; only those in ``encoded`` are encoded.
        test = " and ".join(tests) or "True"
        lines = "".join(values.get(index, "") for index in encoded)
        return f"def {name}(record):\n{''.join(reads)}    if not ({test}):\n        return None\n{lines}{body}"

    same = " and ".join(f"p{index}[0] is p{index}[1]" for index in pairs)
    lean_too = f"    return {{result}}(full, LEAN % {_arguments(lean_args)})\n"
    if "explanation" not in names:
        # Without prose, the two forms differ only where a nested value's do.
        lean_too = "    return {result}(full, full)\n" if not pairs else (
            f"    if {same}:\n        return {{result}}(full, full)\n{lean_too}"
        )
    both = f"    full = FULL % {_arguments(full_args)}\n{lean_too}"
    identity = f"IDENTITY % {_arguments(identity_args)}"
    everything = range(len(names))
    source = function("encode", everything, both.format(result=""))
    if id_field is not None:
        # The id's value is the hex digest of the identity payload, written in as text.
        id_index = names.index(id_field)
        source += function(
            "seal",
            (index for index in everything if index != id_index),
            f"    digest = _sha256({identity}).hexdigest()\n"
            f"    b{id_index} = _encode_text(digest).encode('utf-8')\n"
            + both.format(result="digest, "),
        )
    else:
        source += "seal = None\n"
    compiled = _compiled(record_type, "encoders", source, namespace)
    if compiled is None:
        encoders = _GENERIC_ENCODERS
    else:
        encoders = _KindEncoders(compiled["encode"], compiled["seal"])
    _ENCODERS[record_type] = encoders
    return encoders


def _declined(record: Record) -> None:
    return None


# A kind whose compiled encoders are missing or out of date takes the generic walk.
_GENERIC_ENCODERS = _KindEncoders(_declined, _declined)


def _arguments(expressions: list[str]) -> str:
    """A tuple display of ``expressions`` (``%`` takes a tuple, even of one)."""
    if len(expressions) == 1:
        return f"({expressions[0]},)"
    return f"({', '.join(expressions)})"


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
    # Fields besides prose and the id that a kind's identity leaves out (its ADR says which).
    IDENTITY_EXCLUDED: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # ``dataclass(slots=True)`` builds a second class with the slots; guard that one.
        if cls.__dict__.get("__slots__") and "__dataclass_fields__" in cls.__dict__:
            _guard_fields(cls)
            _compile_kind(cls)

    def __post_init__(self) -> None:
        generation = _GENERATION[0]
        found = self.find_defect()
        if found is not None:
            raise RecordError(found)
        # Records are built from the inside out, so encoding each one as it is validated
        # finds its nested records' bytes already remembered.
        _remember_valid(self, generation, _validated_bytes(self))

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
        # The one place a record kind leaves further fields out of its identity: a kind
        # overrides this only when what it leaves out depends on its values.
        return self.IDENTITY_EXCLUDED

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
        return _sealed_from(record)


def _sealed_from(record: Record) -> Any:
    """``Record.sealed`` once every slot is written, the id with a placeholder."""
    cls = type(record)
    generation = _GENERATION[0]
    found = record.find_defect(check_identity=False)
    if found is not None:
        raise RecordError(found)
    # The parts encoded to hash the record are kept as its bytes, the id written in.
    found = None
    if cls._identity_excluded is _STATIC_EXCLUSIONS:
        found = (_ENCODERS.get(cls) or _kind_encoders(cls)).seal(record)
    if found is None:
        pieces = _record_pieces(record)
        identity = hashlib.sha256(_identity_bytes(record, pieces)).hexdigest()
        found = identity, _joined(pieces, cls.ID_FIELD, f'"{identity}"'.encode())
    _SLOT_WRITERS[cls][cls.ID_FIELD](record, found[0])
    _remember_valid(record, generation, found[1])
    return record


_STATIC_EXCLUSIONS = Record._identity_excluded
_GENERIC_FIND_DEFECT = Record.find_defect
_GENERIC_SEALED = Record.sealed.__func__  # type: ignore[attr-defined]


# Compiled record kinds (docs/adr/0003, "Compiled record kinds"). When a record kind is
# created, two of its methods are generated from its fields and ``SCHEMA``, the way
# ``dataclasses`` generates ``__init__``: ``__init__`` writes each slot directly after one
# look at the memo (the guarded setters would look once per field), and ``find_defect``
# runs the checks in ``SCHEMA`` order with each check's accept test inline, calling the
# check only for a value the test does not accept. Both mean exactly what the generic code
# means; ``tests/cover/test_identity.py`` runs each against its generic counterpart.
def _compile_kind(record_type: type) -> None:
    name = record_type.__name__
    fields = dataclasses.fields(record_type)  # type: ignore[arg-type]
    namespace: dict[str, Any] = {
        "_VALIDATED": _VALIDATED,
        "_forget_everything": _forget_everything,
        "RecordDefect": RecordDefect,
        "Defect": Defect,
        "CanonicalizationError": CanonicalizationError,
        "_MAX_SAFE_INT": MAX_SAFE_INT,
        "_MAX_TEXT_LENGTH": MAX_TEXT_LENGTH,
        "_has_lone_surrogate": has_lone_surrogate,
        "_digest_shape": _DIGEST,
        "_version_shape": _VERSION,
        "_code_shape": _CODE,
        "_digests_seen": _DIGEST.seen,
        "_versions_seen": _VERSION.seen,
        "_codes_seen": _CODE.seen,
    }
    source = []
    plain = all(
        field.init and field.default_factory is dataclasses.MISSING for field in fields
    )
    defaults = {}
    for index, field in enumerate(fields):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = f"_default{index}"
            namespace[f"_default{index}"] = field.default
    if plain:
        writers = _SLOT_WRITERS[record_type]
        parameters = ", ".join(
            f"{field.name}={defaults[field.name]}" if field.name in defaults else field.name
            for field in fields
        )
        lines = ["    if _VALIDATED.get(id(self)) is self:", "        _forget_everything()"]
        for index, field in enumerate(fields):
            namespace[f"_write{index}"] = writers[field.name]
            lines.append(f"    _write{index}(self, {field.name})")
        lines.append("    self.__post_init__()")
        source.append(f"def __init__(self, {parameters}):\n" + "\n".join(lines))
    id_field = record_type.ID_FIELD  # type: ignore[attr-defined]
    if plain and id_field is not None:
        # ``sealed``: keyword-only fields, the id's placeholder as its default.
        namespace.update(_new=object.__new__, _sealed_from=_sealed_from)
        namespace["_PLACEHOLDER"] = "0" * DIGEST_LENGTH
        defaults[id_field] = "_PLACEHOLDER"
        keywords = ", ".join(
            f"{field.name}={defaults[field.name]}" if field.name in defaults else field.name
            for field in fields
        )
        writes = "".join(f"    _write{index}(record, {field.name})\n" for index, field in enumerate(fields))
        source.append(
            f"def sealed(cls, *, {keywords}):\n"
            f"    record = _new(cls)\n{writes}"
            f"    return _sealed_from(record)"
        )
    # A kind with a ``find_defect`` of its own (``SourceSpan``) keeps it.
    if record_type.find_defect in (_GENERIC_FIND_DEFECT, *_GENERATED_FIND_DEFECTS):
        lines = []
        for index, (field_name, check) in enumerate(record_type.SCHEMA):  # type: ignore[attr-defined]
            namespace[f"_check{index}"] = check
            value = f"v{index}"
            lines.append(f"    {value} = self.{field_name}")
            accept = _ACCEPT_TESTS.get(check)
            indent = "    "
            if accept is not None:
                test, names = accept
                renamed = {key: f"_{key}{index}" for key in names}
                namespace.update({renamed[key]: named for key, named in names.items()})
                lines.append(f"    if not {test.format(v=value, **renamed)}:")
                indent = "        "
            lines += [
                f"{indent}found = _check{index}({value})",
                f"{indent}if found is not None:",
                f"{indent}    return RecordDefect({name!r}, {field_name!r}, found)",
            ]
        identity = (
            ""
            if id_field is None
            else (
                "        if cross is None and check_identity:\n"
                f"            if self.{id_field} != self._checked_id():\n"
                f"                cross = ({id_field!r}, Defect.IDENTITY_MISMATCH)\n"
            )
        )
        lines.append(
            "    try:\n"
            "        cross = self._cross_check()\n"
            f"{identity}"
            "    except CanonicalizationError:\n"
            "        cross = ('$', Defect.NOT_CANONICAL)\n"
            f"    return None if cross is None else RecordDefect({name!r}, cross[0], cross[1])"
        )
        source.append(
            "def find_defect(self, *, check_identity=True):\n" + "\n".join(lines)
        )
    compiled = _compiled(record_type, "methods", "\n".join(source) + "\n", namespace)
    if compiled is None:
        return
    if "__init__" in compiled:
        generated = compiled["__init__"]
        generated.__qualname__ = f"{record_type.__qualname__}.__init__"
        generated.__annotations__ = dict(record_type.__init__.__annotations__)
        record_type.__init__ = generated  # type: ignore[misc]
    if "sealed" in compiled:
        generated = compiled["sealed"]
        generated.__qualname__ = f"{record_type.__qualname__}.sealed"
        generated.__doc__ = _GENERIC_SEALED.__doc__
        record_type.sealed = classmethod(generated)  # type: ignore[attr-defined]
    if "find_defect" in compiled:
        generated = compiled["find_defect"]
        generated.__qualname__ = f"{record_type.__qualname__}.find_defect"
        generated.__doc__ = _GENERIC_FIND_DEFECT.__doc__
        _GENERATED_FIND_DEFECTS.add(generated)
        record_type.find_defect = generated  # type: ignore[attr-defined]


_GENERATED_FIND_DEFECTS: set[Callable[..., Any]] = set()

# What ``_compile_kind`` and ``_kind_encoders`` generate for each kind, by key: the source and
# the names it takes. ``practice-loop compile-kinds`` writes every kernel kind's source into
# ``compiled_kinds`` (a plain module, reviewed like any other), and the kernel installs a
# kind's functions from there only while their source is exactly what the kind generates now.
GENERATED_SOURCES: dict[str, tuple[str, tuple[str, ...]]] = {}


def kind_key(record_type: type, part: str) -> str:
    return f"{record_type.__module__}.{record_type.__qualname__}:{part}"


def source_digest(source: str, names: tuple[str, ...]) -> str:
    return hashlib.sha256(canonical_json([source, list(names)])).hexdigest()


def _compiled(
    record_type: type, part: str, source: str, namespace: dict[str, Any]
) -> dict[str, Any] | None:
    """The functions ``source`` defines, built by ``compiled_kinds`` from ``namespace``; or
    ``None`` when that module holds no current build of them (the generic code then
    answers: slower, never different)."""
    key = kind_key(record_type, part)
    names = tuple(sorted(namespace))
    GENERATED_SOURCES[key] = (source, names)
    build = compiled_kinds.BUILDS.get(key)
    if build is None or build[0] != source_digest(source, names):
        return None
    return build[1](**namespace)  # type: ignore[no-any-return]


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
# A trusted record's canonical bytes (with prose, without), by id. An entry exists only while
# the record's own ``_VALIDATED`` entry does (both are emptied together, never one by one), so
# finding one proves the record is that live, trusted object: the lookup needs no other check.
_BYTES: dict[int, tuple[bytes, bytes]] = {}
_TUPLE_BYTES: dict[int, tuple[tuple[object, ...], tuple[bytes, bytes]]] = {}
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
    _BYTES.clear()
    _TUPLE_BYTES.clear()
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
        _BYTES[id(record)] = encoded  # type: ignore[assignment]


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


class DecodeReason(enum.Enum):
    """Why a decoded JSON value cannot be rebuilt into a record's field."""

    EXPECTED_OBJECT = "expected_object"
    FIELDS_MISMATCH = "fields_mismatch"
    NO_UNION_MEMBER_FITS = "no_union_member_fits"
    EXPECTED_LIST = "expected_list"
    LENGTH_MISMATCH = "length_mismatch"
    EXPECTED_ENUM_VALUE = "expected_enum_value"
    UNKNOWN_ENUM_VALUE = "unknown_enum_value"
    WRONG_TYPE = "wrong_type"
    UNSUPPORTED_TYPE = "unsupported_type"


class DecodeError(ValueError):
    """The typed refusal of ``record_from_json``: a JSON value that is not the record's form.
    ``where`` is the field path (``Record.field[]``); the message is unchanged prose."""

    def __init__(self, reason: DecodeReason, where: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.where = where


def _decode_value(hint: Any, value: object, where: str) -> object:
    """``value`` (decoded JSON) as the type ``hint`` names; ``DecodeError`` when it cannot be."""
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
        message = f"{where}: no type of {hint} fits"
        raise DecodeError(DecodeReason.NO_UNION_MEMBER_FITS, where, message)
    if origin is tuple:
        if type(value) is not list:
            raise DecodeError(DecodeReason.EXPECTED_LIST, where, f"{where}: expected a list")
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode_value(args[0], item, f"{where}[]") for item in value)
        if len(args) != len(value):
            message = f"{where}: expected {len(args)} items"
            raise DecodeError(DecodeReason.LENGTH_MISMATCH, where, message)
        return tuple(
            _decode_value(a, item, f"{where}[]") for a, item in zip(args, value, strict=True)
        )
    if isinstance(hint, type) and issubclass(hint, Record):
        return record_from_json(hint, value)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if type(value) is not str:
            message = f"{where}: expected an enum value"
            raise DecodeError(DecodeReason.EXPECTED_ENUM_VALUE, where, message)
        try:
            return hint(value)
        except ValueError as error:
            raise DecodeError(DecodeReason.UNKNOWN_ENUM_VALUE, where, str(error)) from None
    if hint in (str, int, bool):
        if type(value) is not hint:
            message = f"{where}: expected {hint.__name__}"
            raise DecodeError(DecodeReason.WRONG_TYPE, where, message)
        return value
    raise DecodeError(DecodeReason.UNSUPPORTED_TYPE, where, f"{where}: unsupported type {hint}")


_TYPE_HINTS: dict[type, dict[str, Any]] = {}


def record_from_json(record_type: type, value: object) -> Any:
    """Rebuild a record from ``to_json()`` output, validating it on construction.

    Exactly the record's fields must be present; enum values must be known; every nested
    record is rebuilt and validated too. Raises ``DecodeError`` or ``RecordError``; callers
    turn them into a typed refusal.
    """
    kind = record_type.__name__
    if type(value) is not dict:
        raise DecodeError(DecodeReason.EXPECTED_OBJECT, kind, f"{kind}: expected an object")
    hints = _TYPE_HINTS.get(record_type)
    if hints is None:
        hints = _TYPE_HINTS[record_type] = typing.get_type_hints(record_type)
    names = [field.name for field in dataclasses.fields(record_type)]
    if set(value) != set(names):
        message = f"{kind}: fields {sorted(set(value) ^ set(names))}"
        raise DecodeError(DecodeReason.FIELDS_MISMATCH, kind, message)
    return record_type(
        **{
            name: _decode_value(hints[name], value[name], f"{kind}.{name}")
            for name in names
        }
    )
