"""The record base: frozen, slotted dataclasses that validate on construction, one canonical
encoder, and trust scoped to one call (docs/adr/0013).

A record kind declares each field's check next to the field, as ``Annotated[type, check]``;
the kind's ``SCHEMA`` is derived from those annotations when the class is made, so a field
without a check cannot be declared.

Every stage re-inspects what it is given, because a value that arrives from outside may be
of another type or may have been altered with ``object.__setattr__``. Within one call
(``trust_scope``), a record the kernel has validated is trusted and its canonical bytes are
kept, so each record is validated and encoded once however many stages hold it. Nothing is
trusted across calls, and nothing is kept at module level.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import operator
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

from .checks import Defect, FieldCheck, RecordDefect, RecordError
from .identity import (
    DIGEST_LENGTH,
    SEPARATORS,
    CanonicalizationError,
    CanonicalReason,
    canonical_json,
)
from .trust import _CURRENT_TRUST, _Trust, remembered, trust_scope


def _admitted(record: Record, *, sealing: bool) -> RecordDefect | None:
    """``_admit`` in the current call, or in a call of its own when none is open."""
    trust = _CURRENT_TRUST.get()
    if trust is not None:
        return _admit(record, trust, sealing=sealing)
    trust = _Trust()
    token = _CURRENT_TRUST.set(trust)
    try:
        return _admit(record, trust, sealing=sealing)
    finally:
        _CURRENT_TRUST.reset(token)


# --------------------------------------------------------------------------------------------
# The canonical encoder (docs/adr/0013, "One encoder")
#
# ``SEPARATORS`` applied field by field: a record's bytes are its fields' bytes joined in key
# order, each key's bytes made once per kind. The result is exactly
# ``dump_checked(to_json())`` (``tests/cover/test_record.py`` checks it on every kind); only
# values that passed their field checks are encoded this way.

_encode_text = json.encoder.encode_basestring  # what ``json.dumps(ensure_ascii=False)`` uses
_COMMA, _COLON = (separator.encode("ascii") for separator in SEPARATORS)
_EMPTY_LIST = (b"[]", b"[]")


def _value_bytes(value: object, trust: _Trust) -> tuple[bytes, bytes]:
    """A checked value as canonical bytes, with prose and without (one object when equal)."""
    kind = type(value)
    if kind is str:
        text = _encode_text(value).encode("utf-8")
        return text, text
    found = trust.encoded.get(id(value))  # a trusted record: the common case
    if found is not None:
        return found
    if kind is tuple:
        return _tuple_bytes(value, trust)  # type: ignore[arg-type]
    if value is None:
        return _NULL
    if isinstance(value, enum.Enum):
        member = value._value_
        if type(member) is str:  # every kernel enum: encoded here, without a call
            text = _encode_text(member).encode("utf-8")
            return text, text
        return _value_bytes(member, trust)
    if kind is bool:
        return _TRUE if value else _FALSE
    if kind is int:
        number = b"%d" % value  # type: ignore[str-format]
        return number, number
    if isinstance(value, Record):
        return _record_bytes(value, trust)
    raise CanonicalizationError(CanonicalReason.UNSUPPORTED_TYPE, "$")


_NULL, _TRUE, _FALSE = (b"null", b"null"), (b"true", b"true"), (b"false", b"false")


def _tuple_bytes(items: tuple[object, ...], trust: _Trust) -> tuple[bytes, bytes]:
    # Evidence tuples are handed on unchanged from stage to stage: each is encoded once. An
    # entry holds its tuple, so no other object takes its id while the call lasts.
    found = trust.tuples.get(id(items))
    if found is not None:
        return found[1]
    if not items:
        return _EMPTY_LIST
    pairs = [_value_bytes(item, trust) for item in items]
    full = b"[" + _COMMA.join([pair[0] for pair in pairs]) + b"]"
    encoded = (full, full)
    for pair in pairs:
        if pair[0] is not pair[1]:
            encoded = (full, b"[" + _COMMA.join([pair[1] for pair in pairs]) + b"]")
            break
    trust.tuples[id(items)] = (items, encoded)
    return encoded


def _field_parts(record: Record, trust: _Trust) -> tuple[list[bytes], dict[int, bytes] | None]:
    """Each field's key and value bytes in key order, and, where a field's value holds
    prose, its bytes without it, by index (``None`` when no value does)."""
    parts: list[bytes] = []
    leaner: dict[int, bytes] | None = None
    for name, key in type(record)._KEYS:
        value = getattr(record, name)
        kind = type(value)
        # The most common fields are encoded here, without a call.
        if kind is str:
            parts.append(key + _encode_text(value).encode("utf-8"))
        elif kind is int:
            parts.append(key + b"%d" % value)
        else:
            with_prose, without = _value_bytes(value, trust)
            if without is not with_prose:
                if leaner is None:
                    leaner = {}
                leaner[len(parts)] = key + without
            parts.append(key + with_prose)
    return parts, leaner


def _joined(
    kind: type[Record], parts: list[bytes], leaner: dict[int, bytes] | None
) -> tuple[bytes, bytes]:
    """The record's bytes with prose and without (one object when equal)."""
    full = b"{" + _COMMA.join(parts) + b"}"
    prose = kind._PROSE_AT
    if prose < 0 and leaner is None:
        return full, full
    lean = list(parts)
    if leaner is not None:
        for index, part in leaner.items():
            lean[index] = part
    if prose >= 0:
        del lean[prose]
    return full, b"{" + _COMMA.join(lean) + b"}"


def _identity_digest(record: Record, parts: list[bytes], leaner: dict[int, bytes] | None) -> str:
    """SHA-256 of the canonical bytes of ``record.identity_payload()``, from its parts: the
    parts without prose, the id blanked (a self-seal) and what the identity leaves out dropped."""
    kind = type(record)
    drops = kind._IDENTITY_DROPS
    if (
        kind._identity_excluded is not _STATIC_EXCLUSIONS
        or kind.IDENTITY_EXCLUDED is not kind._DECLARED_EXCLUDED
    ):
        # Exclusions that depend on values, or that were changed after the kind was made.
        drops = _identity_drops(kind, record._identity_excluded())
    hashed = list(parts)
    if leaner is not None:
        for index, part in leaner.items():
            hashed[index] = part
    id_at, id_key = kind._ID_AT
    if id_at not in drops:
        hashed[id_at] = id_key + b'""'
    for index in sorted(drops, reverse=True):
        del hashed[index]
    return hashlib.sha256(b"{" + _COMMA.join(hashed) + b"}").hexdigest()


def _identity_drops(kind: type[Record], excluded: frozenset[str]) -> frozenset[int]:
    """Where in ``_KEYS`` the fields an identity leaves out are: prose, ``excluded``, and the
    id itself unless the kind self-seals."""
    return frozenset(
        index
        for index, (name, _) in enumerate(kind._KEYS)
        if name == "explanation"
        or name in excluded
        or (name == kind.ID_FIELD and not kind.SELF_SEALED)
    )


def _record_bytes(record: Record, trust: _Trust) -> tuple[bytes, bytes]:
    """The bytes of a record trusted in this call, as ``_admit`` (or ``admit_pinned``) kept
    them. Only a record whose checks admit more than the hashable profile is trusted without
    its bytes: encoding it again refuses it (``CanonicalizationError``)."""
    found = trust.encoded.get(id(record))
    return _joined(type(record), *_field_parts(record, trust)) if found is None else found


# --------------------------------------------------------------------------------------------
# JSON forms


def _shared_value(value: object) -> tuple[object, object]:
    # A field value in JSON form (enums by value, tuples as lists, records as objects), with
    # prose and without; a nested record contributes its own forms, shared.
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
    read, never mutated (``to_json`` hands out copies)."""
    return remembered(record, "json_forms", lambda: _fields_forms(record))  # type: ignore[no-any-return]


def _fields_forms(record: Record) -> tuple[dict[str, Any], dict[str, Any]]:
    full: dict[str, Any] = {}
    lean: dict[str, Any] = {}
    shared = True
    for name in type(record)._FIELDS:
        full[name], lean_value = _shared_value(getattr(record, name))
        if name == "explanation":
            shared = False
        else:
            lean[name] = lean_value
            shared = shared and lean_value is full[name]
    return full, (full if shared else lean)


def _copied(value: object) -> object:
    if type(value) is dict:
        return {key: _copied(item) for key, item in value.items()}
    if type(value) is list:
        return [_copied(item) for item in value]
    return value


# --------------------------------------------------------------------------------------------
# The record base


_PLACEHOLDER_ID = "0" * DIGEST_LENGTH


class Record:
    """Base of every kernel record: a frozen, slotted dataclass that validates on construction.

    Each field is declared ``Annotated[type, check]``; ``_cross_check`` adds the rules that
    span fields. Stage functions call ``inspect_record`` on what they are given, and answer
    a malformed value with a typed refusal, not an exception.
    """

    __slots__ = ()
    ID_FIELD: ClassVar[str | None] = None
    SELF_SEALED: ClassVar[bool] = True
    # Fields besides prose and the id that a kind's identity leaves out (its ADR says which).
    IDENTITY_EXCLUDED: ClassVar[frozenset[str]] = frozenset()
    # Derived from the fields' annotations when the kind is made (``_declare``), never after.
    SCHEMA: ClassVar[tuple[tuple[str, FieldCheck], ...]] = ()
    _FIELDS: ClassVar[tuple[str, ...]] = ()
    _FIELD_VALUES: ClassVar[typing.Callable[[Any], tuple[object, ...]]]  # in declaration order
    _KEYS: ClassVar[tuple[tuple[str, bytes], ...]] = ()  # names and their key bytes, sorted
    _PROSE_AT: ClassVar[int]  # where ``explanation`` is in ``_KEYS``, or -1
    _ID_AT: ClassVar[tuple[int, bytes]]  # where the id is in ``_KEYS``, its key (if an id)
    _IDENTITY_DROPS: ClassVar[frozenset[int]] = frozenset()  # what the identity leaves out
    _DECLARED_EXCLUDED: ClassVar[frozenset[str]] = frozenset()  # what ``_IDENTITY_DROPS`` holds
    _DEFAULTS: ClassVar[tuple[tuple[str, object], ...]] = ()
    _DECLARED: ClassVar[type | None] = None  # the kind itself, once ``_declare`` made it
    _HINTS: ClassVar[Mapping[str, Any]] = types.MappingProxyType({})

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # ``dataclass(slots=True)`` makes a second class, with the fields; declare that one.
        if "__dataclass_fields__" in cls.__dict__:
            _declare(cls)

    def __post_init__(self) -> None:
        if type(self)._DECLARED is not type(self):
            raise TypeError(f"{type(self).__name__}: declare record kinds frozen and slotted")
        trust = _CURRENT_TRUST.get()
        found = (
            _admitted(self, sealing=False) if trust is None else _admit(self, trust, sealing=False)
        )
        if found is not None:
            raise RecordError(found)

    def _shape_defect(self) -> RecordDefect | None:
        """The first field or cross-field defect, identity aside."""
        for field_name, check in self.SCHEMA:
            found = check(getattr(self, field_name))
            if found is not None:
                return RecordDefect(type(self).__name__, field_name, found)
        try:
            cross = self._cross_check()
        except CanonicalizationError:
            cross = ("$", Defect.NOT_CANONICAL)
        return None if cross is None else RecordDefect(type(self).__name__, cross[0], cross[1])

    def find_defect(self) -> RecordDefect | None:
        """The first defect of this record, its identity included, or ``None``: the same
        validation as ``inspect_record``, which also trusts a sound record for the call."""
        return _admitted(self, sealing=False)

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
        """The canonical JSON of ``to_json(drop_explanations=...)``. A record trusted in the
        current call is encoded from its checked fields (each check at least as strict as
        the hashable profile); any other goes through ``canonical_json``, which refuses what
        is outside the profile."""
        trust = _CURRENT_TRUST.get()
        if trust is not None and (trust.records.get(id(self)) is self or _admits(self, trust)):
            return _record_bytes(self, trust)[drop_explanations]
        return canonical_json(_forms(self)[drop_explanations])

    def content_digest(self, *, drop_explanations: bool = False) -> str:
        """SHA-256 of ``canonical_bytes``: the identity of a record that has no id field."""
        return _hashed(self.canonical_bytes(drop_explanations=drop_explanations))

    def compute_id(self) -> str:
        return _hashed(canonical_json(self.identity_payload()))

    @classmethod
    def sealed(cls, **fields: Any) -> Any:
        """Construct the record with its identity field computed from the other fields.

        The fields are validated first (with a placeholder id), then hashed once; going
        through ``__init__`` would hash them a second time only to compare.
        """
        if cls.ID_FIELD is None or cls._DECLARED is not cls:
            raise TypeError(f"{cls.__name__} has no identity to seal")
        record = object.__new__(cls)
        for name, default in cls._DEFAULTS:
            value = fields.pop(name, default)
            if value is dataclasses.MISSING:
                if name != cls.ID_FIELD:
                    raise TypeError(f"{cls.__name__}.sealed() needs {name}")
                value = _PLACEHOLDER_ID
            object.__setattr__(record, name, value)  # a new record: its own fields, once
        if fields:
            raise TypeError(f"{cls.__name__}.sealed() got unknown fields {sorted(fields)}")
        found = _admitted(record, sealing=True)
        if found is not None:
            raise RecordError(found)
        return record


_STATIC_EXCLUSIONS = Record._identity_excluded


def _hashed(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _admit(record: Record, trust: _Trust, *, sealing: bool) -> RecordDefect | None:
    """Validate ``record`` in full and, when it is well formed, trust it for the rest of the
    call, its bytes kept; with ``sealing``, write its id first. The parts encoded to hash the
    record are the parts of its bytes, so each record is encoded once."""
    found = record._shape_defect()
    if found is not None:
        return found
    id_field = record.ID_FIELD
    kind = type(record)
    try:
        parts, leaner = _field_parts(record, trust)
    except CanonicalizationError:  # a kind whose checks admit more than the profile
        if id_field is not None:
            return RecordDefect(kind.__name__, "$", Defect.NOT_CANONICAL)
        trust.records[id(record)] = record  # its bytes are built, and refused, on first use
        return None
    if id_field is not None:
        digest = _identity_digest(record, parts, leaner)
        if sealing:
            object.__setattr__(record, id_field, digest)
            parts[kind._ID_AT[0]] = kind._ID_AT[1] + b'"' + digest.encode("ascii") + b'"'
        elif getattr(record, id_field) != digest:
            return RecordDefect(kind.__name__, id_field, Defect.IDENTITY_MISMATCH)
    both = _joined(kind, parts, leaner)
    trust.records[id(record)] = record
    trust.encoded[id(record)] = both
    return None


def _admits(record: Record, trust: _Trust) -> bool:
    try:
        return _admit(record, trust, sealing=False) is None
    except AttributeError:  # a slot emptied by tampering
        return False


def _declare(kind: type[Record]) -> None:
    """Derive a kind's ``SCHEMA`` and its encoding and decoding tables from its fields, once,
    when the class is made; a field declared without exactly one check, or a kind that is not
    frozen, is a ``TypeError``."""
    if not kind.__dataclass_params__.frozen:  # type: ignore[attr-defined]
        raise TypeError(f"{kind.__name__}: declare record kinds frozen and slotted")
    fields = dataclasses.fields(kind)  # type: ignore[arg-type]
    hints = typing.get_type_hints(kind, include_extras=True)
    schema, decoding = [], {}
    for field in fields:
        hint = hints[field.name]
        checks = [item for item in getattr(hint, "__metadata__", ()) if callable(item)]
        if typing.get_origin(hint) is not typing.Annotated or len(checks) != 1:
            raise TypeError(f"{kind.__name__}.{field.name}: declare it Annotated[type, check]")
        schema.append((field.name, checks[0]))
        decoding[field.name] = hint.__origin__
    names = tuple(field.name for field in fields)
    kind.SCHEMA = tuple(schema)
    kind._FIELDS = names
    getter = operator.attrgetter(*names)
    kind._FIELD_VALUES = getter if len(names) > 1 else lambda record: (getter(record),)
    kind._KEYS = tuple(
        (name, _encode_text(name).encode("utf-8") + _COLON) for name in sorted(names)
    )
    in_key_order = [name for name, _ in kind._KEYS]
    kind._PROSE_AT = in_key_order.index("explanation") if "explanation" in names else -1
    if kind.ID_FIELD is not None:
        id_at = in_key_order.index(kind.ID_FIELD)
        kind._ID_AT = (id_at, kind._KEYS[id_at][1])
    kind._IDENTITY_DROPS = _identity_drops(kind, kind.IDENTITY_EXCLUDED)
    kind._DECLARED_EXCLUDED = kind.IDENTITY_EXCLUDED
    kind._DEFAULTS = tuple((field.name, field.default) for field in fields)
    kind._DECLARED = kind
    kind._HINTS = types.MappingProxyType(decoding)


def nested(record_type: type) -> FieldCheck:
    """A field holding another record, validated in full (once per call)."""

    def check(value: object) -> Defect | None:
        trust = _CURRENT_TRUST.get()
        if trust is not None and trust.records.get(id(value)) is value:
            return None if type(value) is record_type else Defect.WRONG_RECORD_TYPE
        found = inspect_record(value, record_type)
        return None if found is None else found.defect

    return check


def inspect_record(value: object, record_type: type) -> RecordDefect | None:
    """The first defect of ``value`` as a ``record_type``, or ``None`` when it is well formed."""
    if type(value) is not record_type:
        return RecordDefect(record_type.__name__, "$", Defect.WRONG_RECORD_TYPE)
    trust = _CURRENT_TRUST.get()
    if trust is not None and trust.records.get(id(value)) is value:
        return None
    try:
        return _admitted(value, sealing=False)  # type: ignore[arg-type]
    except AttributeError:  # a slot emptied by tampering
        return RecordDefect(record_type.__name__, "$", Defect.WRONG_TYPE)


def checked_canonical_bytes(value: object, record_type: type) -> bytes:
    """The canonical bytes of ``value`` (every field, prose included) once it inspects clean
    as a ``record_type``; raises ``RecordError`` otherwise."""
    with trust_scope():
        found = inspect_record(value, record_type)
        if found is not None:
            raise RecordError(found)
        return _record_bytes(value, _CURRENT_TRUST.get())[0]  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Constants the kernel builds at import (docs/adr/0013, "Constants")


@dataclasses.dataclass(frozen=True, slots=True)
class Pinned:
    """A record the kernel builds once, at import, kept as it was validated then: every record
    of its tree with its kind and its field values (the very objects), and their bytes."""

    record: Record
    tree: tuple[tuple[Record, type[Record], tuple[object, ...]], ...]
    records: Mapping[int, Record]  # by id, as a call's trust holds them
    encoded: Mapping[int, tuple[bytes, bytes]]


def pin(record: Record) -> Pinned:
    """Validate a constant once and keep what was validated; ``RecordError`` if it is not."""
    with trust_scope():
        trust = _CURRENT_TRUST.get()
        assert trust is not None
        found = inspect_record(record, type(record))
        if found is not None:
            raise RecordError(found)
        tree: dict[int, tuple[Record, type[Record], tuple[object, ...]]] = {}
        pending: list[object] = [record]
        while pending:
            value = pending.pop()
            if type(value) is tuple:
                pending.extend(value)
            elif isinstance(value, Record) and id(value) not in tree:
                tree[id(value)] = (value, type(value), type(value)._FIELD_VALUES(value))
                pending.extend(tree[id(value)][2])
        return Pinned(
            record,
            tuple(tree.values()),
            types.MappingProxyType({key: entry[0] for key, entry in tree.items()}),
            types.MappingProxyType(
                {key: _record_bytes(entry[0], trust) for key, entry in tree.items()}
            ),
        )


def admit_pinned(pinned: Pinned) -> bool:
    """Trust a constant in the current call without validating it again, when every record
    of its tree still holds, field for field, the very objects it was validated with (an
    in-place change anywhere makes this false, and the stage that receives the constant then
    validates it in full). Outside a call there is nothing to trust: false."""
    trust = _CURRENT_TRUST.get()
    if trust is None:
        return False
    try:
        for record, kind, values in pinned.tree:
            if type(record) is not kind or not all(
                map(operator.is_, kind._FIELD_VALUES(record), values)
            ):
                return False
    except AttributeError:  # a slot emptied in place
        return False
    trust.records.update(pinned.records)
    trust.encoded.update(pinned.encoded)
    return True


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


def record_from_json(record_type: type[Record], value: object) -> Any:
    """Rebuild a record from ``to_json()`` output, validating it on construction.

    Exactly the record's fields must be present; enum values must be known; every nested
    record is rebuilt and validated too. Raises ``DecodeError`` or ``RecordError``; callers
    turn them into a typed refusal.
    """
    kind = record_type.__name__
    if type(value) is not dict:
        raise DecodeError(DecodeReason.EXPECTED_OBJECT, kind, f"{kind}: expected an object")
    names = record_type._FIELDS
    if set(value) != set(names):
        message = f"{kind}: fields {sorted(set(value) ^ set(names))}"
        raise DecodeError(DecodeReason.FIELDS_MISMATCH, kind, message)
    hints = record_type._HINTS
    return record_type(
        **{name: _decode_value(hints[name], value[name], f"{kind}.{name}") for name in names}
    )
