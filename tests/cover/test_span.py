"""Source spans (docs/adr/0003): the one-expression recognition of a well-formed span, the
exact defect of each malformed one, and ``span_in_source``.

``SourceSpan._shape_defect`` accepts a well-formed span in one expression and sends anything
else through the field checks. Narrowing that expression changes no verdict, only the cost, so
the first test watches the field checks themselves: a span on any limit must never reach them.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from practice_loop.kernel import SourceSpan
from practice_loop.kernel.checks import Defect, RecordDefect
from practice_loop.kernel.identity import MAX_SAFE_INT, MAX_TEXT_LENGTH
from practice_loop.kernel.record import inspect_record
from practice_loop.kernel.span import span_in_source
from practice_strategies import Impostor, tampered

_TEXTS = st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=8)


def _shape_defect_without_field_checks(span: SourceSpan) -> bool:
    """Whether ``span`` is judged well formed without one call of a field check."""
    called: list[str] = []

    def spying(name, check):
        def spy(value):
            called.append(name)
            return check(value)

        return spy

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            SourceSpan, "SCHEMA", tuple((name, spying(name, c)) for name, c in SourceSpan.SCHEMA)
        )
        found = span._shape_defect()
    return found is None and not called


@given(
    text=_TEXTS,
    start=st.integers(0, MAX_SAFE_INT - 8),
    index=st.integers(0, MAX_SAFE_INT),
)
@example(text="a", start=0, index=0)
@example(text="a", start=MAX_SAFE_INT - 1, index=MAX_SAFE_INT)  # end at the largest safe int
@example(text="a" * MAX_TEXT_LENGTH, start=0, index=1)  # the longest text
@example(text="é", start=5, index=0)
def test_a_well_formed_span_is_recognised_without_its_field_checks(text, start, index):
    span = SourceSpan(text, start, start + len(text), index)
    assert _shape_defect_without_field_checks(span)


_VALID = SourceSpan("ab", 3, 5, 1)

# (id, changes to a valid span, field, defect)
DEFECTS = [
    ("start-negative", {"start": -1, "end": 1, "text": "ab"}, "start", Defect.SPAN_START_NEGATIVE),
    ("end-negative", {"end": -1}, "end", Defect.SPAN_EMPTY_OR_INVERTED),
    ("empty", {"end": 3, "text": ""}, "end", Defect.SPAN_EMPTY_OR_INVERTED),
    ("inverted", {"start": 5, "end": 3}, "end", Defect.SPAN_EMPTY_OR_INVERTED),
    ("length-short", {"end": 4}, "text", Defect.SPAN_LENGTH_MISMATCH),
    ("length-long", {"end": 6}, "text", Defect.SPAN_LENGTH_MISMATCH),
    # A text as long as start + end (and start | end, start ^ end), then one as long as
    # end >> start: only the difference of the offsets is a span's length.
    (
        "length-of-offsets-combined",
        {"start": 1, "end": 2, "text": "abc"},
        "text",
        Defect.SPAN_LENGTH_MISMATCH,
    ),
    (
        "length-of-end-shifted",
        {"start": 1, "end": 4, "text": "ab"},
        "text",
        Defect.SPAN_LENGTH_MISMATCH,
    ),
    (
        "index-negative",
        {"sentence_index": -1},
        "sentence_index",
        Defect.SPAN_SENTENCE_INDEX_NEGATIVE,
    ),
    ("end-above-safe", {"end": MAX_SAFE_INT + 1}, "end", Defect.INT_OUT_OF_RANGE),
    # Text as long as its offsets' difference: only the bound on end refuses it.
    (
        "end-one-past-safe-length-right",
        {"start": MAX_SAFE_INT, "end": MAX_SAFE_INT + 1, "text": "a"},
        "end",
        Defect.INT_OUT_OF_RANGE,
    ),
    # Offsets as a decoder makes them, two int objects of one value above CPython's small-int
    # cache: emptiness is a comparison of values, never of objects.
    ("empty-far-decoded", {"start": 1000, "end": int("1000"), "text": ""}, "end",
     Defect.SPAN_EMPTY_OR_INVERTED),
    (
        "index-above-safe",
        {"sentence_index": MAX_SAFE_INT + 1},
        "sentence_index",
        Defect.INT_OUT_OF_RANGE,
    ),
    ("start-bool", {"start": True}, "start", Defect.BOOL_NOT_INT),
    ("end-float", {"end": 5.0}, "end", Defect.FLOAT_NOT_INT),
    ("text-bytes", {"text": b"ab"}, "text", Defect.WRONG_TYPE),
    # A value whose class claims to equal every class: the fast path asks types by identity.
    ("text-impostor", {"text": Impostor()}, "text", Defect.WRONG_TYPE),
    ("start-impostor", {"start": Impostor()}, "start", Defect.WRONG_TYPE),
    ("end-impostor", {"end": Impostor()}, "end", Defect.WRONG_TYPE),
    ("index-impostor", {"sentence_index": Impostor()}, "sentence_index", Defect.WRONG_TYPE),
    ("text-lone-surrogate", {"text": "a\ud800"}, "text", Defect.TEXT_LONE_SURROGATE),
    (
        "text-too-long",
        {"text": "a" * (MAX_TEXT_LENGTH + 1), "end": 3 + MAX_TEXT_LENGTH + 1},
        "text",
        Defect.TEXT_TOO_LONG,
    ),
]


@pytest.mark.parametrize(
    ("changes", "field", "defect"),
    [pytest.param(changes, field, defect, id=ident) for ident, changes, field, defect in DEFECTS],
)
def test_each_malformed_span_has_its_exact_defect(changes, field, defect):
    found = inspect_record(tampered(_VALID, **changes), SourceSpan)
    assert found is not None
    assert (found.record, found.field, found.defect) == ("SourceSpan", field, defect)


@given(text=_TEXTS, start=st.integers(0, 64), length=st.integers(1, 64))
def test_a_span_whose_text_is_not_its_length_is_a_length_mismatch(text, start, length):
    assume(len(text) != length)
    found = inspect_record(tampered(_VALID, text=text, start=start, end=start + length), SourceSpan)
    assert found == RecordDefect("SourceSpan", "text", Defect.SPAN_LENGTH_MISMATCH)


def test_a_span_is_in_its_source_only_at_its_exact_offsets():
    source = "Mia has 5 stickers."
    assert span_in_source(SourceSpan("5", 8, 9, 0), source)
    assert not span_in_source(SourceSpan("5", 7, 8, 0), source)
    assert not span_in_source(SourceSpan(".", 19, 20, 0), source)  # past the end
