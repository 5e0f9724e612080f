"""The field checks of ``kernel.checks`` at their boundaries (docs/adr/0003).

Each check is met through the records that declare it everywhere else; here every check is
asked directly about the values on either side of each of its limits, so a limit moved or a
fast path that accepts too much is seen in this file, whichever record would have met it.
"""

from __future__ import annotations

import enum

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from practice_loop.kernel import checks
from practice_loop.kernel.checks import (
    MAX_SEQUENCE,
    Defect,
    RecordDefect,
    check_int,
    code,
    digest,
    exactly,
    flag,
    is_digest,
    is_version,
    label,
    member_of,
    non_negative_int,
    optional,
    or_blank,
    positive_int,
    text,
    tuple_of,
    version,
    version_pairs,
)
from practice_loop.kernel.identity import MAX_SAFE_INT, MAX_TEXT_LENGTH
from practice_strategies import Impostor, RaisingImpostor


class _Colour(enum.Enum):
    RED = "red"


class _Other(enum.Enum):
    RED = "red"


UNSORTED = Defect.PAIRS_NOT_SORTED_UNIQUE

# (id, check, value, the defect expected or None)
CASES = [
    ("non-negative-zero", non_negative_int, 0, None),
    ("non-negative-largest-safe", non_negative_int, MAX_SAFE_INT, None),
    ("non-negative-above-safe", non_negative_int, MAX_SAFE_INT + 1, Defect.INT_OUT_OF_RANGE),
    ("non-negative-minus-one", non_negative_int, -1, Defect.NEGATIVE_VALUE),
    ("non-negative-below-safe", non_negative_int, -MAX_SAFE_INT - 1, Defect.INT_OUT_OF_RANGE),
    ("non-negative-bool", non_negative_int, True, Defect.BOOL_NOT_INT),
    ("non-negative-float", non_negative_int, 1.0, Defect.FLOAT_NOT_INT),
    ("non-negative-str", non_negative_int, "1", Defect.WRONG_TYPE),
    ("positive-one", positive_int, 1, None),
    ("positive-largest-safe", positive_int, MAX_SAFE_INT, None),
    ("positive-above-safe", positive_int, MAX_SAFE_INT + 1, Defect.INT_OUT_OF_RANGE),
    ("positive-zero", positive_int, 0, Defect.NOT_POSITIVE),
    ("positive-minus-one", positive_int, -1, Defect.NOT_POSITIVE),
    ("positive-bool", positive_int, True, Defect.BOOL_NOT_INT),
    ("flag-true", flag, True, None),
    ("flag-int", flag, 1, Defect.WRONG_TYPE),
    ("text-empty", text, "", None),
    ("text-longest", text, "a" * MAX_TEXT_LENGTH, None),
    ("text-too-long", text, "a" * (MAX_TEXT_LENGTH + 1), Defect.TEXT_TOO_LONG),
    ("text-lone-surrogate", text, "a\ud800", Defect.TEXT_LONE_SURROGATE),
    ("text-bytes", text, b"a", Defect.WRONG_TYPE),
    ("label-one-char", label, "a", None),
    ("label-empty", label, "", Defect.TEXT_EMPTY),
    ("label-too-long", label, "a" * (MAX_TEXT_LENGTH + 1), Defect.TEXT_TOO_LONG),
    ("digest-ok", digest, "0" * 64, None),
    ("digest-short", digest, "0" * 63, Defect.DIGEST_MALFORMED),
    ("digest-long", digest, "0" * 65, Defect.DIGEST_MALFORMED),
    ("digest-upper", digest, "A" * 64, Defect.DIGEST_MALFORMED),
    ("digest-int", digest, 0, Defect.WRONG_TYPE),
    ("version-ok", version, "compute_budget.v1", None),
    ("version-v0", version, "compute_budget.v0", Defect.VERSION_MALFORMED),
    ("version-six-digits", version, "a.v999999", None),
    ("version-seven-digits", version, "a.v1000000", Defect.VERSION_MALFORMED),
    ("version-none", version, None, Defect.WRONG_TYPE),
    ("code-ok", code, "a" * 96, None),
    ("code-too-long", code, "a" * 97, Defect.CODE_MALFORMED),
    ("code-leading-digit", code, "1a", Defect.CODE_MALFORMED),
    ("code-int", code, 1, Defect.WRONG_TYPE),
    ("exactly-supported", exactly("a.v1"), "a.v1", None),
    ("exactly-other-version", exactly("a.v1"), "a.v2", Defect.VERSION_UNSUPPORTED),
    ("exactly-not-a-version", exactly("a.v1"), "a", Defect.VERSION_MALFORMED),
    ("exactly-int", exactly("a.v1"), 1, Defect.WRONG_TYPE),
    ("member-of-member", member_of(_Colour), _Colour.RED, None),
    ("member-of-value", member_of(_Colour), "red", Defect.UNKNOWN_ENUM_VALUE),
    ("member-of-other-enum", member_of(_Colour), _Other.RED, Defect.WRONG_TYPE),
    ("optional-none", optional(positive_int), None, None),
    ("optional-inner-checked", optional(positive_int), 0, Defect.NOT_POSITIVE),
    ("or-blank-blank", or_blank(digest), "", None),
    ("or-blank-inner-checked", or_blank(digest), "x", Defect.DIGEST_MALFORMED),
    ("tuple-empty", tuple_of(positive_int), (), None),
    ("tuple-empty-refused", tuple_of(positive_int, non_empty=True), (), Defect.SEQUENCE_EMPTY),
    ("tuple-list", tuple_of(positive_int), [1], Defect.SEQUENCE_NOT_TUPLE),
    ("tuple-longest", tuple_of(positive_int), (1,) * MAX_SEQUENCE, None),
    ("tuple-too-long", tuple_of(positive_int), (1,) * (MAX_SEQUENCE + 1), Defect.SEQUENCE_TOO_LONG),
    ("tuple-item-checked", tuple_of(positive_int), (1, 0), Defect.NOT_POSITIVE),
    ("pairs-ok", version_pairs, (("a", "a.v1"), ("b", "b.v1")), None),
    ("pairs-unsorted", version_pairs, (("b", "b.v1"), ("a", "a.v1")), UNSORTED),
    ("pairs-repeated", version_pairs, (("a", "a.v1"), ("a", "a.v1")), UNSORTED),
    ("pairs-triple", version_pairs, (("a", "a.v1", "x"),), Defect.WRONG_TYPE),
    ("pairs-bad-version", version_pairs, (("a", "a"),), Defect.VERSION_MALFORMED),
    ("pairs-list", version_pairs, [("a", "a.v1")], Defect.SEQUENCE_NOT_TUPLE),
    # A value whose class claims to equal every class: each check asks the type by identity.
    ("non-negative-impostor", non_negative_int, Impostor(), Defect.WRONG_TYPE),
    ("positive-impostor", positive_int, Impostor(), Defect.WRONG_TYPE),
    ("flag-impostor", flag, Impostor(), Defect.WRONG_TYPE),
    ("text-impostor", text, Impostor(), Defect.WRONG_TYPE),
    ("label-impostor", label, Impostor(), Defect.WRONG_TYPE),
    ("digest-impostor", digest, Impostor(), Defect.WRONG_TYPE),
    ("version-impostor", version, Impostor(), Defect.WRONG_TYPE),
    ("code-impostor", code, Impostor(), Defect.WRONG_TYPE),
    ("exactly-impostor", exactly("a.v1"), Impostor(), Defect.WRONG_TYPE),
    ("member-of-impostor", member_of(_Colour), Impostor(), Defect.WRONG_TYPE),
    ("optional-impostor", optional(positive_int), Impostor(), Defect.WRONG_TYPE),
    ("or-blank-impostor", or_blank(digest), Impostor(), Defect.WRONG_TYPE),
    ("or-blank-raising-impostor", or_blank(digest), RaisingImpostor(), Defect.WRONG_TYPE),
    ("tuple-impostor", tuple_of(positive_int), Impostor(), Defect.SEQUENCE_NOT_TUPLE),
    ("tuple-item-impostor", tuple_of(positive_int), (1, Impostor()), Defect.WRONG_TYPE),
    ("pairs-impostor", version_pairs, Impostor(), Defect.SEQUENCE_NOT_TUPLE),
    ("pairs-impostor-pair", version_pairs, (Impostor(),), Defect.WRONG_TYPE),
]


@pytest.mark.parametrize("value", [Impostor(), RaisingImpostor(), b"0" * 64, None])
def test_is_digest_and_is_version_are_false_for_anything_but_a_string(value):
    """The public predicates ask the type by identity before matching: a value whose class
    claims to be str is neither a digest nor a version (and is never matched)."""
    assert is_digest(value) is False
    assert is_version(value) is False


@pytest.mark.parametrize(
    ("check", "value", "expected"),
    [pytest.param(check, value, expected, id=ident) for ident, check, value, expected in CASES],
)
def test_each_check_answers_its_defect_on_either_side_of_each_limit(check, value, expected):
    assert check(value) is expected


@given(st.integers(min_value=-(2**60), max_value=2**60))
@example(MAX_SAFE_INT)
@example(MAX_SAFE_INT + 1)
@example(0)
@example(1)
def test_the_integer_checks_accept_exactly_their_safe_range(value):
    """The fast path of each integer check agrees with the full check for every int."""
    assert (non_negative_int(value) is None) == (0 <= value <= MAX_SAFE_INT)
    assert (positive_int(value) is None) == (1 <= value <= MAX_SAFE_INT)


@pytest.mark.parametrize(
    ("check", "value"),
    [
        (non_negative_int, 0),
        (non_negative_int, MAX_SAFE_INT),
        (positive_int, 1),
        (positive_int, MAX_SAFE_INT),
    ],
)
def test_an_int_in_range_is_accepted_without_the_full_check(check, value):
    """The integer checks are on every record's hot path: an int in range, up to either limit,
    is accepted in one comparison. Narrowing it would change no verdict, only the cost, so
    this watches ``check_int`` itself."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(checks, "check_int", lambda *args, **kwargs: pytest.fail("full check"))
        assert check(value) is None


# The caps as the ADRs write them: a literal here, never the kernel's own constant, so a cap
# moved by one in the kernel fails (a test computed from the constant would move with it).
DOCUMENTED_CAPS = [
    ("checks.MAX_SEQUENCE", 4096, "docs/adr/0003: tuples of at most 4096 items"),
    ("frame.MAX_FRAME_SPANS", 256, "docs/adr/0005: at most 256 spans in a frame"),
    ("frame.MAX_FRAME_ITEMS", 256, "docs/adr/0005: at most 256 items in a frame"),
    ("frame.MAX_SOURCE_LENGTH", 10_000, "docs/adr/0005: source text of 10,000 characters"),
    ("frame.MAX_EVIDENCE_CHARS", 20_000, "docs/adr/0005: 20,000 characters of span text"),
]


@pytest.mark.obligation("LOCAL-0005/frame_caps", "LOCAL-0003/int_range")
@pytest.mark.parametrize(("name", "documented", "where"), DOCUMENTED_CAPS)
def test_each_cap_is_the_one_the_adr_documents(name, documented, where):
    import practice_loop.kernel.frame as frame

    module, _, constant = name.partition(".")
    assert getattr({"checks": checks, "frame": frame}[module], constant) == documented, where


@pytest.mark.obligation("LOCAL-0003/int_range")
def test_a_tuple_of_exactly_the_cap_is_accepted_and_one_more_refused():
    check = tuple_of(code)
    assert check(("a",) * 4096) is None
    assert check(("a",) * 4097) is Defect.SEQUENCE_TOO_LONG


@pytest.mark.obligation("LOCAL-0003/int_range")
@pytest.mark.parametrize(
    ("value", "minimum", "expected"),
    [
        (0, None, None),
        (-1, None, Defect.NEGATIVE_VALUE),
        (MAX_SAFE_INT, None, None),
        (MAX_SAFE_INT + 1, None, Defect.INT_OUT_OF_RANGE),
        (-MAX_SAFE_INT, -MAX_SAFE_INT, None),
        (-MAX_SAFE_INT - 1, -MAX_SAFE_INT, Defect.INT_OUT_OF_RANGE),
        (0, 1, Defect.NOT_POSITIVE),
        (1, 1, None),
    ],
)
def test_check_int_judges_the_whole_range_itself(value, minimum, expected):
    """``check_int`` is the full check behind the fast paths: its own limits, and its
    default minimum of 0, hold when it is called directly."""
    found = check_int(value) if minimum is None else check_int(value, minimum=minimum)
    assert found is expected


@pytest.mark.obligation("LOCAL-0003/int_range")
@pytest.mark.parametrize("pair", [(), ("a",), ("a", "a.v1", "b")])
def test_a_version_pair_of_another_length_is_the_wrong_type(pair):
    assert version_pairs((pair,)) is Defect.WRONG_TYPE


def test_a_record_defect_is_frozen_and_slotted():
    import dataclasses

    found = RecordDefect("Kind", "field", Defect.WRONG_TYPE)
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.field = "other"  # type: ignore[misc]
    assert "__slots__" in vars(RecordDefect)
