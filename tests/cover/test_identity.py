"""Canonical bytes, digests, canonical decoding, source spans and record inspection.

Clauses: ADR-0228 §10 and ADR-0231 §14 (one canonical-JSON rule, full lowercase SHA-256),
ARCHITECTURE §2 "Hashable values" and "Loading a persisted record" (our hashable profile and
its closed ``CanonicalReason`` set), and the span rule of ARCHITECTURE §2 / ADR-0227 §7.
"""

from __future__ import annotations

import enum
import hashlib
import json
import re
import subprocess
import sys
from collections import OrderedDict

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from practice_loop.kernel import (
    MAX_SAFE_INT,
    CanonicalizationError,
    CanonicalReason,
    Defect,
    RecordDefect,
    RecordError,
    SourceSpan,
    Stage,
    StageRefusal,
    canonical_json,
    decode_canonical,
    is_digest,
    is_version,
    practice_case,
    sha256_digest,
    trust_scope,
)
from practice_loop.kernel.identity import (
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    MAX_NODES,
    MAX_TEXT_LENGTH,
    _nesting_depth,
    check_canonical,
)
from practice_loop.kernel.record import Record, inspect_record
from practice_loop.kernel.refusal import refuse
from practice_loop.product.reader import ReaderRefusal, read_question
from practice_strategies import (
    Impostor,
    chains,
    codes,
    digests,
    malformed_digests,
    malformed_versions,
    oracle,
    span_texts,
    spans,
    tampered,
    texts_with_lone_surrogate,
    versions,
)

# ------------------------------------------------------------------------------------------
# Strategies local to this module

# Exact ``str`` that UTF-8 can encode (no lone surrogates), as keys and as values.
utf8_text = st.text(st.characters(codec="utf-8"), max_size=12)
safe_ints = st.integers(-MAX_SAFE_INT, MAX_SAFE_INT)
scalars = st.one_of(st.none(), st.booleans(), safe_ints, utf8_text)

# Values inside the hashable profile: exact str/int/bool/None, lists, dicts with str keys.
canonical_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(utf8_text, inner, max_size=4),
    ),
    max_leaves=20,
)


def reference_bytes(value: object) -> bytes:
    """ADR-0228 §10 verbatim: the bytes every identity hashes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(
        "utf-8"
    )


@st.composite
def embedded(draw: st.DrawFn, hostile: object) -> object:
    """``hostile`` placed at a drawn position inside a shallow, otherwise valid structure."""
    value = hostile
    for _ in range(draw(st.integers(0, 4))):
        siblings = draw(st.lists(scalars, max_size=3))
        if draw(st.booleans()):
            position = draw(st.integers(0, len(siblings)))
            value = [*siblings[:position], value, *siblings[position:]]
        else:
            key = draw(utf8_text)
            value = {f"s{index}": item for index, item in enumerate(siblings)} | {key: value}
    return value


def reason_of(payload: object) -> CanonicalReason:
    with pytest.raises(CanonicalizationError) as caught:
        canonical_json(payload)
    return caught.value.reason


def decode_reason(data: object) -> CanonicalReason:
    with pytest.raises(CanonicalizationError) as caught:
        decode_canonical(data)  # type: ignore[arg-type]
    return caught.value.reason


def span_defect(text: object, start: object, end: object, sentence_index: object) -> RecordDefect:
    with pytest.raises(RecordError) as caught:
        SourceSpan(text, start, end, sentence_index)  # type: ignore[arg-type]
    return caught.value.found


class Small(enum.IntEnum):
    ONE = 1


class Colour(enum.StrEnum):
    RED = "red"


class Plain(enum.Enum):
    A = "a"


class Shout(str):
    pass


class Count(int):
    pass


class Listy(list):
    pass


class Lying(dict):
    def items(self):  # a dict that lies to json.dumps about its contents
        return [("a", 1)]


# ------------------------------------------------------------------------------------------
# canonical_json and sha256_digest agree with the ADR rule inside the profile


@pytest.mark.obligation("LOCAL-0003/one_encoder")
@given(canonical_values)
def test_canonical_json_is_the_adr_rule(value: object) -> None:
    """ADR-0228 §10: canonical_json is json.dumps(sort_keys, compact, ensure_ascii=False) UTF-8."""
    assert canonical_json(value) == reference_bytes(value)


@pytest.mark.obligation("LOCAL-0003/one_encoder")
@given(canonical_values)
def test_sha256_digest_is_sha256_of_canonical_bytes(value: object) -> None:
    """ADR-0231 §14: the digest is the full lowercase hex SHA-256 of the canonical bytes."""
    found = sha256_digest(value)
    assert found == hashlib.sha256(reference_bytes(value)).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", found)
    assert is_digest(found)


@pytest.mark.obligation("LOCAL-0003/one_encoder")
@given(canonical_values)
def test_canonical_json_is_deterministic_and_key_order_free(value: object) -> None:
    """ADR-0228 §10: same value, same bytes; dict insertion order never reaches the bytes."""
    assert canonical_json(value) == canonical_json(value)
    if isinstance(value, dict):
        reversed_value = dict(reversed(list(value.items())))
        assert canonical_json(reversed_value) == canonical_json(value)


@pytest.mark.obligation("LOCAL-0003/value_encoding")
def test_tuple_encodes_like_list() -> None:
    """Our decision (hashable profile): a tuple is a JSON array, byte-equal to the list."""
    assert canonical_json((1, "a", (None, True))) == canonical_json([1, "a", [None, True]])
    assert canonical_json((1, "a")) == b'[1,"a"]'


@pytest.mark.obligation("LOCAL-0003/one_encoder", "LOCAL-0003/int_range")
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"b": 1, "a": [True, None]}, b'{"a":[true,null],"b":1}'),
        ("é\u0301\U0001f600\x00", '"é\u0301\U0001f600\\u0000"'.encode()),
        (MAX_SAFE_INT, b"9007199254740991"),
        (-MAX_SAFE_INT, b"-9007199254740991"),
    ],
    ids=["sorted-keys", "non-ascii-kept-nul-escaped", "max-safe-int", "min-safe-int"],
)
def test_canonical_json_labelled_bytes(value: object, expected: bytes) -> None:
    """ADR-0228 §10: exact bytes for keys, non-ASCII text and the int bounds."""
    assert canonical_json(value) == expected


# ------------------------------------------------------------------------------------------
# Values outside the profile: each gives its exact CanonicalReason


HOSTILE_VALUES = [
    pytest.param(1.5, CanonicalReason.FLOAT_NOT_ALLOWED, id="float"),
    pytest.param(0.0, CanonicalReason.FLOAT_NOT_ALLOWED, id="float-zero"),
    pytest.param(-0.0, CanonicalReason.FLOAT_NOT_ALLOWED, id="float-negative-zero"),
    pytest.param(float("nan"), CanonicalReason.NON_FINITE_FLOAT, id="nan"),
    pytest.param(float("inf"), CanonicalReason.NON_FINITE_FLOAT, id="inf"),
    pytest.param(float("-inf"), CanonicalReason.NON_FINITE_FLOAT, id="-inf"),
    pytest.param(2**53, CanonicalReason.INT_OUT_OF_RANGE, id="int-2**53"),
    pytest.param(-(2**53), CanonicalReason.INT_OUT_OF_RANGE, id="int--2**53"),
    pytest.param(10**400, CanonicalReason.INT_OUT_OF_RANGE, id="int-huge"),
    pytest.param(Small.ONE, CanonicalReason.SUBCLASS_NOT_ALLOWED, id="intenum"),
    pytest.param(Colour.RED, CanonicalReason.SUBCLASS_NOT_ALLOWED, id="str-enum"),
    pytest.param(Shout("x"), CanonicalReason.SUBCLASS_NOT_ALLOWED, id="str-subclass"),
    pytest.param(Count(3), CanonicalReason.SUBCLASS_NOT_ALLOWED, id="int-subclass"),
    pytest.param(Listy([1]), CanonicalReason.SUBCLASS_NOT_ALLOWED, id="list-subclass"),
    pytest.param(Lying(b=2), CanonicalReason.SUBCLASS_NOT_ALLOWED, id="lying-dict-subclass"),
    pytest.param(OrderedDict(a=1), CanonicalReason.SUBCLASS_NOT_ALLOWED, id="ordereddict"),
    pytest.param(b"x", CanonicalReason.UNSUPPORTED_TYPE, id="bytes"),
    pytest.param(bytearray(b"x"), CanonicalReason.UNSUPPORTED_TYPE, id="bytearray"),
    pytest.param({1, 2}, CanonicalReason.UNSUPPORTED_TYPE, id="set"),
    pytest.param(frozenset(), CanonicalReason.UNSUPPORTED_TYPE, id="frozenset"),
    pytest.param(object(), CanonicalReason.UNSUPPORTED_TYPE, id="object"),
    pytest.param(Plain.A, CanonicalReason.UNSUPPORTED_TYPE, id="plain-enum"),
    pytest.param(1j, CanonicalReason.UNSUPPORTED_TYPE, id="complex"),
    pytest.param(Impostor(), CanonicalReason.UNSUPPORTED_TYPE, id="class-equal-to-every-class"),
    pytest.param({1: "a"}, CanonicalReason.KEY_NOT_STR, id="int-key"),
    pytest.param({None: "a"}, CanonicalReason.KEY_NOT_STR, id="none-key"),
    pytest.param({True: "a"}, CanonicalReason.KEY_NOT_STR, id="bool-key"),
    pytest.param({(1,): "a"}, CanonicalReason.KEY_NOT_STR, id="tuple-key"),
    pytest.param({Shout("k"): "a"}, CanonicalReason.KEY_NOT_STR, id="str-subclass-key"),
    pytest.param({Colour.RED: "a"}, CanonicalReason.KEY_NOT_STR, id="str-enum-key"),
    pytest.param({Impostor(): "a"}, CanonicalReason.KEY_NOT_STR, id="key-equal-to-every-class"),
    pytest.param("a\ud800b", CanonicalReason.LONE_SURROGATE, id="lone-surrogate-value"),
    pytest.param("\udfff", CanonicalReason.LONE_SURROGATE, id="lone-low-surrogate"),
    pytest.param({"k\udc00": 1}, CanonicalReason.LONE_SURROGATE, id="lone-surrogate-key"),
    pytest.param("x" * (MAX_TEXT_LENGTH + 1), CanonicalReason.SIZE_EXCEEDED, id="long-string"),
    pytest.param({"k" * (MAX_TEXT_LENGTH + 1): 1}, CanonicalReason.SIZE_EXCEEDED, id="long-key"),
]


@pytest.mark.obligation(
    "LOCAL-0003/hashable_types",
    "LOCAL-0003/text_rules",
    "LOCAL-0003/canonical_reasons",
)
@pytest.mark.parametrize(("hostile", "reason"), HOSTILE_VALUES)
def test_hostile_value_gives_exact_reason(hostile: object, reason: CanonicalReason) -> None:
    """ARCHITECTURE §2 hashable profile: each value outside it has its own closed reason."""
    assert reason_of(hostile) is reason
    with pytest.raises(CanonicalizationError) as caught:
        sha256_digest(hostile)
    assert caught.value.reason is reason


@pytest.mark.obligation("LOCAL-0003/hashable_types", "LOCAL-0003/canonical_reasons")
@given(st.sampled_from([param.values for param in HOSTILE_VALUES]), st.data())
def test_hostile_value_anywhere_gives_exact_reason(
    case: tuple[object, CanonicalReason], data: st.DataObject
) -> None:
    """ARCHITECTURE §2: the reason does not depend on where in the payload the value sits."""
    hostile, reason = case
    payload = data.draw(embedded(hostile))
    assert reason_of(payload) is reason


@pytest.mark.obligation("LOCAL-0003/hashable_types")
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_finite_float_is_refused(value: float) -> None:
    """ADR-0228 §10: floats are forbidden in hashed payloads, even integral ones."""
    assert reason_of(value) is CanonicalReason.FLOAT_NOT_ALLOWED


@pytest.mark.obligation("LOCAL-0003/int_range")
@given(st.one_of(st.integers(min_value=2**53), st.integers(max_value=-(2**53))))
@example(2**53)
@example(-(2**53))
def test_int_outside_safe_range_is_refused(value: int) -> None:
    """ARCHITECTURE §2: ints are bounded by +/-(2**53 - 1)."""
    assert reason_of(value) is CanonicalReason.INT_OUT_OF_RANGE


@pytest.mark.obligation("LOCAL-0003/int_range")
@pytest.mark.parametrize("value", [MAX_SAFE_INT, -MAX_SAFE_INT, 0, True, False, None])
def test_bounds_and_bool_are_inside_the_profile(value: object) -> None:
    """ARCHITECTURE §2: 2**53 - 1 and its negation pass; bool and None are allowed values."""
    check_canonical(value)
    assert canonical_json(value) == reference_bytes(value)


@pytest.mark.obligation("LOCAL-0003/caps")
def test_nesting_at_max_depth_passes_and_one_more_is_refused() -> None:
    """ARCHITECTURE §2: an explicit depth cap, MAX_DEPTH containers deep at most."""
    at_cap: object = 0
    for _ in range(MAX_DEPTH):
        at_cap = [at_cap]
    assert canonical_json(at_cap) == reference_bytes(at_cap)
    assert reason_of([at_cap]) is CanonicalReason.DEPTH_EXCEEDED
    assert reason_of({"k": at_cap}) is CanonicalReason.DEPTH_EXCEEDED


@pytest.mark.obligation("LOCAL-0003/caps")
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 100_000])
def test_deep_nesting_is_refused_without_recursion(depth: int) -> None:
    """ARCHITECTURE §2: depth is checked without recursion, so very deep input ends typed."""
    deep: object = None
    for index in range(depth):
        deep = [deep] if index % 2 else {"k": deep}
    assert reason_of(deep) is CanonicalReason.DEPTH_EXCEEDED


@pytest.mark.obligation("LOCAL-0003/caps")
def test_self_containing_values_end_with_depth_exceeded() -> None:
    """identity.check_canonical: a cycle ends at the depth cap instead of looping."""
    cycle: list[object] = []
    cycle.append(cycle)
    assert reason_of(cycle) is CanonicalReason.DEPTH_EXCEEDED
    wide: list[object] = [1]
    wide.extend([wide, wide, wide])
    assert reason_of(wide) is CanonicalReason.DEPTH_EXCEEDED
    loop: dict[str, object] = {}
    loop["self"] = loop
    assert reason_of(loop) is CanonicalReason.DEPTH_EXCEEDED


@pytest.mark.obligation("LOCAL-0003/caps")
def test_node_count_cap() -> None:
    """ARCHITECTURE §2: size caps; MAX_NODES nodes pass, one more is SIZE_EXCEEDED."""
    at_cap = [0] * (MAX_NODES - 1)  # the list itself is a node
    check_canonical(at_cap)
    assert reason_of([0] * MAX_NODES) is CanonicalReason.SIZE_EXCEEDED


@pytest.mark.obligation("LOCAL-0003/text_rules")
def test_string_length_cap() -> None:
    """ARCHITECTURE §2: size caps; a string of MAX_TEXT_LENGTH passes, one more does not."""
    check_canonical("x" * MAX_TEXT_LENGTH)
    assert reason_of("x" * (MAX_TEXT_LENGTH + 1)) is CanonicalReason.SIZE_EXCEEDED


@pytest.mark.obligation("LOCAL-0003/canonical_reasons")
def test_canonicalization_error_is_a_value_error_with_reason_and_place() -> None:
    """ARCHITECTURE §2: a typed refusal (ValueError) naming its reason and where it sits."""
    with pytest.raises(CanonicalizationError) as caught:
        canonical_json({"a": [0, 1.5]})
    assert isinstance(caught.value, ValueError)
    assert caught.value.reason is CanonicalReason.FLOAT_NOT_ALLOWED
    assert caught.value.where == "$.a[1]"


# ------------------------------------------------------------------------------------------
# decode_canonical: the inverse of canonical_json, strict on everything else


@pytest.mark.obligation("LOCAL-0003/decode")
@given(canonical_values)
def test_decode_round_trips_canonical_bytes(value: object) -> None:
    """ARCHITECTURE §2 loading: canonical bytes decode to the value and re-encode identically."""
    data = canonical_json(value)
    decoded = decode_canonical(data)
    assert decoded == value
    assert canonical_json(decoded) == data


@pytest.mark.obligation("LOCAL-0003/decode")
@given(st.binary(max_size=64))
@example(b"")
@example(b"\xff")
@example(b"-0")
@example(b'"\\ud800"')
def test_decode_never_raises_anything_but_a_typed_error(data: bytes) -> None:
    """ARCHITECTURE §2 loading: arbitrary bytes either are canonical or are a typed refusal."""
    try:
        value = decode_canonical(data)
    except CanonicalizationError as error:
        assert isinstance(error.reason, CanonicalReason)
    else:
        assert canonical_json(value) == data


@pytest.mark.obligation("LOCAL-0003/decode", "LOCAL-0003/canonical_reasons")
@pytest.mark.parametrize(
    ("data", "reason"),
    [
        pytest.param("1", CanonicalReason.UNSUPPORTED_TYPE, id="str"),
        pytest.param(bytearray(b"1"), CanonicalReason.UNSUPPORTED_TYPE, id="bytearray"),
        pytest.param(memoryview(b"1"), CanonicalReason.UNSUPPORTED_TYPE, id="memoryview"),
        pytest.param(None, CanonicalReason.UNSUPPORTED_TYPE, id="none"),
        pytest.param(Impostor(), CanonicalReason.UNSUPPORTED_TYPE, id="equal-to-every-class"),
        pytest.param(b'"\xff"', CanonicalReason.INVALID_UTF8, id="invalid-utf8"),
        pytest.param(b'"\xed\xa0\x80"', CanonicalReason.INVALID_UTF8, id="utf8-surrogate"),
        pytest.param(b"\xc0\xaf", CanonicalReason.INVALID_UTF8, id="overlong-utf8"),
        pytest.param(b"1.5", CanonicalReason.FLOAT_NOT_ALLOWED, id="float"),
        pytest.param(b"1e3", CanonicalReason.FLOAT_NOT_ALLOWED, id="exponent"),
        pytest.param(b"1.0", CanonicalReason.FLOAT_NOT_ALLOWED, id="integral-float"),
        pytest.param(b"[1,-2.5E-1]", CanonicalReason.FLOAT_NOT_ALLOWED, id="nested-float"),
        pytest.param(b"NaN", CanonicalReason.NON_FINITE_FLOAT, id="nan"),
        pytest.param(b"Infinity", CanonicalReason.NON_FINITE_FLOAT, id="infinity"),
        pytest.param(b"-Infinity", CanonicalReason.NON_FINITE_FLOAT, id="-infinity"),
        pytest.param(b"9007199254740992", CanonicalReason.INT_OUT_OF_RANGE, id="2**53"),
        pytest.param(b"-9007199254740992", CanonicalReason.INT_OUT_OF_RANGE, id="-2**53"),
        pytest.param(b"1" * 5000, CanonicalReason.INT_OUT_OF_RANGE, id="huge-int"),
        pytest.param(b'{"a":1,"a":2}', CanonicalReason.DUPLICATE_KEY, id="duplicate-key"),
        pytest.param(b'{"a":{"b":1,"b":1}}', CanonicalReason.DUPLICATE_KEY, id="nested-dup"),
        pytest.param(b'{"b":1,"a":2}', CanonicalReason.NOT_CANONICAL, id="key-order"),
        pytest.param(b'{"a": 1}', CanonicalReason.NOT_CANONICAL, id="spacing"),
        pytest.param(b"[1, 2]", CanonicalReason.NOT_CANONICAL, id="list-spacing"),
        pytest.param(b" 1", CanonicalReason.NOT_CANONICAL, id="leading-space"),
        pytest.param(b"1\n", CanonicalReason.NOT_CANONICAL, id="trailing-newline"),
        pytest.param(b"-0", CanonicalReason.NOT_CANONICAL, id="negative-zero"),
        pytest.param(b'"\\u0041"', CanonicalReason.NOT_CANONICAL, id="needless-escape"),
        pytest.param(b'"\\u00e9"', CanonicalReason.NOT_CANONICAL, id="ascii-escaped"),
        pytest.param(b'"\\ud800"', CanonicalReason.LONE_SURROGATE, id="escaped-surrogate"),
        pytest.param(b"", CanonicalReason.INVALID_JSON, id="empty"),
        pytest.param(b"{", CanonicalReason.INVALID_JSON, id="unclosed"),
        pytest.param(b"garbage", CanonicalReason.INVALID_JSON, id="garbage"),
        pytest.param(b"[1,]", CanonicalReason.INVALID_JSON, id="trailing-comma"),
        pytest.param(b"01", CanonicalReason.INVALID_JSON, id="leading-zero"),
        pytest.param(b"'a'", CanonicalReason.INVALID_JSON, id="single-quotes"),
        pytest.param(b"1 2", CanonicalReason.INVALID_JSON, id="two-values"),
        pytest.param(b'"' + b"a" * 400_000 + b'"', CanonicalReason.SIZE_EXCEEDED, id="size"),
        pytest.param(
            b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
            CanonicalReason.DEPTH_EXCEEDED,
            id="depth-33",
        ),
    ],
)
def test_decode_refuses_with_exact_reason(data: object, reason: CanonicalReason) -> None:
    """ARCHITECTURE §2 loading: strict UTF-8, hooks refuse floats/NaN/dups/big ints, exact bytes."""
    assert decode_reason(data) is reason


@pytest.mark.obligation("LOCAL-0003/decode")
@pytest.mark.parametrize("number", [b"9007199254740992", b"-9007199254740992"])
@pytest.mark.parametrize("template", [b"%s", b"[1,%s]", b'{"a":{"b":%s}}'])
def test_decode_refuses_an_int_past_the_bound_while_reading_it(template, number) -> None:
    """ARCHITECTURE §2 loading: the parser's int hook refuses +/-2**53 as it reads the number
    (no path known there: ``$``), so an int out of range never reaches re-encoding; a hook
    that let -2**53 through was caught only later, by the encoder, naming its path."""
    with pytest.raises(CanonicalizationError) as caught:
        decode_canonical(template % number)
    assert (caught.value.reason, caught.value.where) == (CanonicalReason.INT_OUT_OF_RANGE, "$")


@pytest.mark.obligation("LOCAL-0003/decode")
@given(st.dictionaries(utf8_text, canonical_values, min_size=2, max_size=4))
def test_decode_refuses_non_canonical_encodings_of_valid_values(value: dict) -> None:
    """ARCHITECTURE §2 loading: re-encoding must give the input bytes exactly."""
    spaced = json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")
    unsorted = json.dumps(
        dict(sorted(value.items(), reverse=True)), separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    assert decode_reason(spaced) is CanonicalReason.NOT_CANONICAL
    assert decode_reason(unsorted) is CanonicalReason.NOT_CANONICAL


@pytest.mark.obligation("LOCAL-0003/decode", "LOCAL-0003/caps")
@pytest.mark.parametrize("depth", [2_000, 100_000])
def test_decode_refuses_very_deep_input_as_depth_exceeded(depth: int) -> None:
    """ARCHITECTURE §2: the depth cap is explicit, not the interpreter's recursion limit."""
    # Valid JSON nested past the cap is DEPTH_EXCEEDED at depth 33; the same reason must hold
    # however deep it goes (and wherever in the call stack decoding happens).
    data = b"[" * depth + b"]" * depth
    assert decode_reason(data) is CanonicalReason.DEPTH_EXCEEDED


def _document_of(size: int) -> list[str]:
    """A list of ASCII strings, each inside the text cap, whose canonical bytes are ``size``
    long: ``[`` and ``]``, two quotes per string and a comma between strings."""
    count = -(-size // (MAX_TEXT_LENGTH + 3))
    characters = size - 3 * count - 1
    share, left = divmod(characters, count)
    return ["a" * (share + (index < left)) for index in range(count)]


@pytest.mark.obligation("LOCAL-0003/decode", "LOCAL-0003/caps")
@pytest.mark.parametrize(
    ("size", "refused"),
    [(MAX_DOCUMENT_BYTES, False), (MAX_DOCUMENT_BYTES + 1, True)],
    ids=["at-the-cap", "one-byte-past"],
)
def test_decode_reads_exactly_up_to_the_document_byte_cap(size: int, refused: bool) -> None:
    """docs/adr/0003 "Reading bytes back": a canonical document of exactly
    ``MAX_DOCUMENT_BYTES`` bytes decodes; one byte longer is SIZE_EXCEEDED before it is
    parsed, though each of its strings is inside the text cap and its nodes inside theirs."""
    payload = _document_of(size)
    data = canonical_json(payload)
    assert len(data) == size
    if refused:
        assert decode_reason(data) is CanonicalReason.SIZE_EXCEEDED
    else:
        assert decode_canonical(data) == payload


def _depth_by_hand(text: str) -> int:
    """The deepest bracket nesting outside strings, one character at a time: a quote outside
    a string opens one; inside, a backslash takes the next character with it, whatever it is,
    and a quote closes it; a string nothing closes runs to the end of the text (where the
    parser refuses it)."""
    depth = deepest = 0
    in_string = escaped = False
    for character in text:
        if in_string:
            if escaped:
                escaped = False
            elif character == "\\":
                escaped = True
            elif character == '"':
                in_string = False
        elif character == '"':
            in_string = True
        elif character in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif character in "]}":
            depth -= 1
    return deepest


# The pre-issue-15 scan, kept to show that nothing changed on valid JSON (it is quadratic on
# an unclosed string, so it only ever sees small inputs here).
_BACKTRACKING_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def _depth_before_issue_15(text: str) -> int:
    depth = deepest = 0
    for bracket in re.findall(r"[\[\]{}]", _BACKTRACKING_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


json_like_text = st.text(
    st.sampled_from('"\\[]{}a:,\n') | st.characters(codec="utf-8"), max_size=80
)


@pytest.mark.obligation("LOCAL-0003/decode", "LOCAL-0003/caps")
@given(json_like_text)
@example('"')
@example('"\\"')
@example('"\\')
@example('"\\\n"[')
@example('\\"[[')
@example('"[" [{]}')
@example('"\\"\\"[')
@example("]]][")
def test_nesting_depth_is_the_character_state_machine(text: str) -> None:
    """docs/adr/0003 "Reading bytes back" (issue 15): the pre-parse depth count is exactly
    the bracket depth outside strings that a character-by-character reading gives, on any
    text: quotes, backslashes, brackets, newlines and unclosed strings included."""
    assert _nesting_depth(text) == _depth_by_hand(text)


@pytest.mark.obligation("LOCAL-0003/decode")
@given(canonical_values)
def test_nesting_depth_is_unchanged_on_valid_json(value: object) -> None:
    """docs/adr/0003 "Reading bytes back" (issue 15): on JSON text, canonical or not, the
    linear scan counts what the backtracking scan it replaced counted."""
    for text in (
        canonical_json(value).decode("utf-8"),
        json.dumps(value, indent=1, ensure_ascii=True),
    ):
        assert _nesting_depth(text) == _depth_before_issue_15(text) == _depth_by_hand(text)


# Inputs the backtracking scan took time quadratic in their size over (about 1000 s each at
# this size), each with what decoding it is, exactly, and what loading it as a trace is.
_HANG_GUARD = """
import json
from practice_loop.kernel import CanonicalizationError, decode_canonical, load_sealed_trace

n = 200_000
inputs = {
    "unclosed_escaped_quotes": b'"' + b'\\\\"' * n,
    "escaped_quotes_from_the_start": b'\\\\"' * n,
    "unclosed_string_in_a_list": b'["' + b'\\\\"' * n,
    "unclosed_after_a_closed_string": b'["a","' + b'\\\\"' * n,
}
results = {}
for name, data in inputs.items():
    try:
        decode_canonical(data)
        decoded = "decoded"
    except CanonicalizationError as error:
        decoded = [error.reason.value, error.where]
    loaded = load_sealed_trace(data)
    failures = [[f.code.value, f.stage, f.detail] for f in loaded.failures]
    results[name] = {"bytes": len(data), "decode": decoded, "load": failures}
print(json.dumps(results))
"""


@pytest.mark.obligation("LOCAL-0003/decode", "LOCAL-0007/loading", "ADR-0226/9.9")
def test_decoding_adversarial_megabytes_never_hangs() -> None:
    """docs/adr/0003 "Reading bytes back", 0007 loading (issue 15): 400 KB of unclosed
    escaped quotes, which the backtracking depth scan took about 1000 s over, decode within
    a generous 60 s in a fresh interpreter, as invalid_json at $; loading them as a trace is
    undecodable at $. A hang guard, not a speed assertion."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _HANG_GUARD],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("decoding 400 KB of hostile bytes took over 60 s: the scan is not linear")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    results = json.loads(done.stdout)
    assert set(results) == {
        "unclosed_escaped_quotes",
        "escaped_quotes_from_the_start",
        "unclosed_string_in_a_list",
        "unclosed_after_a_closed_string",
    }
    for name, result in results.items():
        assert result["bytes"] >= 400_000, name
        assert result["decode"] == ["invalid_json", "$"], name
        assert result["load"] == [["undecodable", "$", "invalid_json at $"]], name


# ------------------------------------------------------------------------------------------
# Digest and version validators


@given(digests)
def test_is_digest_accepts_full_lowercase_hex(value: str) -> None:
    """ADR-0228 §10: a digest is 64 lowercase hex characters."""
    assert is_digest(value)


@given(malformed_digests)
def test_is_digest_rejects_short_long_upper_and_non_hex(value: str) -> None:
    """ADR-0228 §10: anything but 64 lowercase hex characters is not a digest."""
    assert not is_digest(value)


@given(versions)
def test_is_version_accepts_versions(value: str) -> None:
    """ADR-0227 §6: a policy or schema version looks like ``name.vN``."""
    assert is_version(value)


@given(malformed_versions)
def test_is_version_rejects_malformed_versions(value: str) -> None:
    """ADR-0227 §6: malformed version strings are not versions."""
    assert not is_version(value)


# ------------------------------------------------------------------------------------------
# SourceSpan: well-formed spans construct and hash; each malformation has its exact defect


@pytest.mark.obligation("LOCAL-0003/span_rules")
@given(spans())
def test_hostile_but_valid_spans_construct_and_hash(span: SourceSpan) -> None:
    """ARCHITECTURE §2 spans: combining marks, astral chars and NUL are valid span text."""
    assert inspect_record(span, SourceSpan) is None
    assert span.end - span.start == len(span.text)
    assert sha256_digest(span.to_json()) == oracle.digest_of(oracle.span_payload(span))


@pytest.mark.obligation("LOCAL-0003/span_rules")
@given(span_texts, st.integers(0, 10_000), st.integers(0, 64))
@example("\x00", 0, 0)
@example("e\u0301", 3, 0)
@example("\U0001f600\U000e0001", 0, 1)
def test_span_offsets_count_code_points(text: str, start: int, sentence_index: int) -> None:
    """ARCHITECTURE §2 spans: offsets count code points, so end - start == len(text)."""
    span = SourceSpan(text, start, start + len(text), sentence_index)
    assert span.to_json() == {
        "text": text,
        "start": start,
        "end": start + len(text),
        "sentence_index": sentence_index,
    }


@pytest.mark.obligation("LOCAL-0003/span_rules")
@given(span_texts, st.integers(-MAX_SAFE_INT, -1), st.integers(0, 8))
def test_span_negative_start(text: str, start: int, sentence_index: int) -> None:
    """ARCHITECTURE §2 spans: 0 <= start, else SPAN_START_NEGATIVE."""
    found = span_defect(text, start, start + len(text), sentence_index)
    assert found == RecordDefect("SourceSpan", "start", Defect.SPAN_START_NEGATIVE)


@pytest.mark.obligation("LOCAL-0003/span_rules")
@given(span_texts, st.integers(0, 10_000), st.integers(0, 10_000))
def test_span_empty_or_inverted(text: str, start: int, back: int) -> None:
    """ARCHITECTURE §2 spans: start < end, else SPAN_EMPTY_OR_INVERTED."""
    end = max(0, start - back)
    found = span_defect(text, start, end, 0)
    assert found == RecordDefect("SourceSpan", "end", Defect.SPAN_EMPTY_OR_INVERTED)


@pytest.mark.obligation("LOCAL-0003/span_rules")
@pytest.mark.parametrize(("start", "end"), [(0, -1), (3, -2), (0, -(2**40))])
def test_span_negative_end_is_inverted_not_negative_start(start: int, end: int) -> None:
    """ARCHITECTURE §2 spans: a negative end with a valid start breaks start < end only."""
    found = span_defect("a", start, end, 0)
    assert found.defect is Defect.SPAN_EMPTY_OR_INVERTED, found


@pytest.mark.obligation("LOCAL-0003/span_rules")
@given(span_texts, st.integers(0, 10_000), st.integers(1, 50), st.data())
def test_span_length_mismatch(text: str, start: int, width: int, data: st.DataObject) -> None:
    """ARCHITECTURE §2 spans: end - start == len(text), else SPAN_LENGTH_MISMATCH."""
    if width == len(text):
        width += data.draw(st.sampled_from([-1, 1])) if width > 1 else 1
    found = span_defect(text, start, start + width, 0)
    assert found == RecordDefect("SourceSpan", "text", Defect.SPAN_LENGTH_MISMATCH)


@pytest.mark.obligation("LOCAL-0003/span_rules")
@given(texts_with_lone_surrogate, st.integers(0, 100))
def test_span_lone_surrogate_text(text: str, start: int) -> None:
    """ARCHITECTURE §2 spans: text holds no lone surrogate, else TEXT_LONE_SURROGATE."""
    found = span_defect(text, start, start + len(text), 0)
    assert found == RecordDefect("SourceSpan", "text", Defect.TEXT_LONE_SURROGATE)


@pytest.mark.obligation("LOCAL-0003/span_rules")
@given(span_texts, st.integers(-MAX_SAFE_INT, -1))
def test_span_negative_sentence_index(text: str, sentence_index: int) -> None:
    """ARCHITECTURE §2 spans: sentence_index >= 0, else SPAN_SENTENCE_INDEX_NEGATIVE."""
    found = span_defect(text, 0, len(text), sentence_index)
    assert found == RecordDefect(
        "SourceSpan", "sentence_index", Defect.SPAN_SENTENCE_INDEX_NEGATIVE
    )


@pytest.mark.obligation("LOCAL-0003/span_rules", "LOCAL-0003/bool_fields")
@pytest.mark.parametrize("field", ["start", "end", "sentence_index"])
@pytest.mark.parametrize(
    ("bad", "defect"),
    [
        (True, Defect.BOOL_NOT_INT),
        (False, Defect.BOOL_NOT_INT),
        (0.0, Defect.FLOAT_NOT_INT),
        (1.0, Defect.FLOAT_NOT_INT),
        (float("nan"), Defect.FLOAT_NOT_INT),
        ("1", Defect.WRONG_TYPE),
        (None, Defect.WRONG_TYPE),
        (Count(1), Defect.WRONG_TYPE),
        (2**53, Defect.INT_OUT_OF_RANGE),
    ],
)
def test_span_int_fields_must_be_exact_ints(field: str, bad: object, defect: Defect) -> None:
    """ARCHITECTURE §2 spans: the ints are real ints (not bool, float or a subclass)."""
    fields: dict[str, object] = {"text": "ab", "start": 1, "end": 3, "sentence_index": 0}
    fields[field] = bad
    found = span_defect(**fields)
    assert found == RecordDefect("SourceSpan", field, defect)


@pytest.mark.obligation("LOCAL-0003/span_rules")
@pytest.mark.parametrize("bad", [b"ab", None, 2, ["a", "b"], Shout("ab")])
def test_span_text_must_be_exact_str(bad: object) -> None:
    """ARCHITECTURE §2 spans: the text is an exact str, else WRONG_TYPE."""
    found = span_defect(bad, 0, 2, 0)
    assert found == RecordDefect("SourceSpan", "text", Defect.WRONG_TYPE)


@pytest.mark.obligation("LOCAL-0003/span_rules")
def test_span_text_too_long() -> None:
    """ARCHITECTURE §2 size caps: span text over MAX_TEXT_LENGTH is TEXT_TOO_LONG."""
    text = "x" * (MAX_TEXT_LENGTH + 1)
    found = span_defect(text, 0, len(text), 0)
    assert found == RecordDefect("SourceSpan", "text", Defect.TEXT_TOO_LONG)


# ------------------------------------------------------------------------------------------
# inspect_record: a foreign type or a tampered record is caught with its exact defect


@pytest.mark.obligation("LOCAL-0003/stages_reinspect")
@pytest.mark.parametrize(
    "value",
    [None, {"text": "a", "start": 0, "end": 1, "sentence_index": 0}, ("a", 0, 1, 0), 3],
)
def test_inspect_wrong_record_type(value: object) -> None:
    """identity.inspect_record: a value of another type is WRONG_RECORD_TYPE at ``$``."""
    found = inspect_record(value, SourceSpan)
    assert found == RecordDefect("SourceSpan", "$", Defect.WRONG_RECORD_TYPE)


@pytest.mark.obligation("LOCAL-0003/stages_reinspect")
@given(spans(), st.data())
def test_inspect_catches_tampered_span(span: SourceSpan, data: st.DataObject) -> None:
    """identity.Record: a record altered after construction is caught by inspect_record."""
    cases = [
        ({"start": -1 - span.start}, "start", Defect.SPAN_START_NEGATIVE),
        ({"end": span.start}, "end", Defect.SPAN_EMPTY_OR_INVERTED),
        ({"end": span.end + 1}, "text", Defect.SPAN_LENGTH_MISMATCH),
        ({"sentence_index": -1}, "sentence_index", Defect.SPAN_SENTENCE_INDEX_NEGATIVE),
        ({"start": True}, "start", Defect.BOOL_NOT_INT),
        ({"end": float(span.end)}, "end", Defect.FLOAT_NOT_INT),
        ({"text": span.text.encode()}, "text", Defect.WRONG_TYPE),
        ({"text": "\ud800" * len(span.text)}, "text", Defect.TEXT_LONE_SURROGATE),
    ]
    changes, field, defect = data.draw(st.sampled_from(cases))
    assert inspect_record(tampered(span, **changes), SourceSpan) == RecordDefect(
        "SourceSpan", field, defect
    )
    assert inspect_record(span, SourceSpan) is None


@pytest.mark.obligation("LOCAL-0003/stages_reinspect")
def test_inspect_catches_an_emptied_slot() -> None:
    """identity.inspect_record: a record with a missing slot is WRONG_TYPE, not an exception."""
    empty = object.__new__(SourceSpan)
    assert inspect_record(empty, SourceSpan) == RecordDefect("SourceSpan", "$", Defect.WRONG_TYPE)


# ------------------------------------------------------------------------------------------
# StageRefusal and refuse


@pytest.mark.obligation("LOCAL-0003/refusal_shapes")
@given(st.sampled_from(Stage), codes, st.sampled_from(Defect), st.one_of(st.none(), digests))
def test_refuse_builds_a_sealed_refusal(
    stage: Stage, reason: str, defect: Defect, subject: str | None
) -> None:
    """ARCHITECTURE §2: a refusal carries closed codes (reason, then defect) and its own id."""
    found = RecordDefect("Thing", "field", defect)
    refusal = refuse(stage, reason, subject_digest=subject, found=found)
    assert type(refusal) is StageRefusal
    assert refusal.stage is stage
    assert refusal.subject_digest == subject
    assert refusal.reason_codes == (reason, defect.value)
    assert "Thing.field" in refusal.explanation
    assert refusal.refusal_id == oracle.refusal_id(refusal)
    plain = refuse(stage, reason, subject_digest=subject)
    assert plain.reason_codes == (reason,)
    assert plain.refusal_id == oracle.refusal_id(plain)
    assert plain.refusal_id != refusal.refusal_id


@pytest.mark.obligation("LOCAL-0003/blanked_self_seal")
@given(st.sampled_from(Stage), codes, utf8_text, utf8_text)
def test_refusal_id_ignores_explanation(stage: Stage, reason: str, one: str, two: str) -> None:
    """ADR-0228 §10: explanation is excluded from every id."""
    first = refuse(stage, reason, explanation=one)
    second = refuse(stage, reason, explanation=two)
    assert first.refusal_id == second.refusal_id
    assert tampered(first, explanation="x").compute_id() == first.refusal_id


@pytest.mark.obligation("LOCAL-0003/refusal_shapes")
@pytest.mark.parametrize(
    ("reason", "defect"),
    [("Not A Code", Defect.CODE_MALFORMED), ("", Defect.CODE_MALFORMED)],
)
def test_refuse_rejects_malformed_reason_codes(reason: str, defect: Defect) -> None:
    """ARCHITECTURE §2: reason codes are a closed, lowercase snake-case vocabulary."""
    with pytest.raises(RecordError) as caught:
        refuse(Stage.ASSESSMENT, reason)
    assert caught.value.found == RecordDefect("StageRefusal", "reason_codes", defect)


@pytest.mark.obligation("LOCAL-0003/records_validate", "LOCAL-0003/sealing")
def test_stage_refusal_with_wrong_id_is_refused() -> None:
    """Our decision (self-seal): a refusal whose id is not its own digest cannot be built."""
    good = refuse(Stage.RESIDUAL, "assessment_runnable")
    with pytest.raises(RecordError) as caught:
        StageRefusal("0" * 64, good.stage, None, good.reason_codes, good.explanation)
    assert caught.value.found == RecordDefect(
        "StageRefusal", "refusal_id", Defect.IDENTITY_MISMATCH
    )


def _records_in(value: object) -> list:
    found, pending = [], [value]
    while pending:
        item = pending.pop()
        if isinstance(item, Record):
            found.append(item)
            pending.extend(getattr(item, name) for name in item.__dataclass_fields__)
        elif type(item) is tuple:
            pending.extend(item)
    return found


def _frames_of_every_kind():
    read = (
        st.text(alphabet=st.sampled_from('Tom has 5 apples.é\u0301\U0001f600\x00"\\\n '))
        .map(lambda text: read_question(f"Tom has 5 apples. {text} How many apples?"))
        .filter(lambda frame: type(frame) is not ReaderRefusal)
    )
    return st.one_of(chains().map(lambda chain: chain.frame), read)


@pytest.mark.obligation("LOCAL-0003/one_encoder", "LOCAL-0013/one_encoder")
@given(_frames_of_every_kind())
def test_bytes_built_from_parts_equal_the_encoder(frame):
    """docs/adr/0013: inside one call, every record's canonical bytes, built field by field
    from its nested records' bytes, are exactly ``canonical_json`` of its JSON form, with
    prose and without; and its identity hashes exactly ``canonical_json(identity_payload())``.
    (Outside a call the bytes come from ``canonical_json`` itself, so the scope is what makes
    this compare two encoders.)"""
    with trust_scope():
        trace = practice_case(frame)
        for record in _records_in(trace):
            assert record.canonical_bytes() == canonical_json(record.to_json())
            assert record.canonical_bytes(drop_explanations=True) == canonical_json(
                record.to_json(drop_explanations=True)
            )
            if type(record).ID_FIELD is not None:
                expected = hashlib.sha256(canonical_json(record.identity_payload())).hexdigest()
                assert getattr(record, type(record).ID_FIELD) == expected == record.compute_id()
