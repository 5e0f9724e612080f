"""Canonical bytes and strict decoding: the one encoding every identity hashes.

Every load-bearing identity in the kernel is the full lowercase SHA-256 of the bytes that
``canonical_json`` makes (ADR-0228 §10, ADR-0231 §14). Nothing else is ever hashed.

The hashable profile is narrower than what ``json.dumps`` accepts (docs/adr/0003): only exact
``str``, ``int``, ``bool``, ``None``, ``list``/``tuple`` and ``dict`` with exact-``str`` keys;
ints within +/-(2**53 - 1); strings without lone surrogates; bounded depth and size. Anything
else is a ``CanonicalizationError`` with a reason from the closed ``CanonicalReason`` set.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re

MAX_SAFE_INT = 2**53 - 1
MAX_DEPTH = 32
MAX_NODES = 100_000
MAX_TEXT_LENGTH = 100_000
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024
DIGEST_LENGTH = 64


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
# the record encoder (``record``) applies it part by part.
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
