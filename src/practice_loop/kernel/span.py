"""Source spans: the exact slices of source text that all evidence points at (docs/adr/0003)."""

from __future__ import annotations

import dataclasses
import types
from typing import Annotated

from .checks import Defect, RecordDefect, non_negative_int, text, tuple_of
from .identity import MAX_SAFE_INT, MAX_TEXT_LENGTH, has_lone_surrogate
from .record import Record, nested


@dataclasses.dataclass(frozen=True, slots=True)
class SourceSpan(Record):
    """An exact slice of the source text; offsets count Unicode code points (docs/adr/0003).

    Well formed when ``0 <= start < end``, ``end - start == len(text)``, the ints are real
    ints, the text holds no lone surrogate and ``sentence_index >= 0``.
    """

    text: Annotated[str, text]
    start: Annotated[int, non_negative_int]
    end: Annotated[int, non_negative_int]
    sentence_index: Annotated[int, non_negative_int]

    def _shape_defect(self) -> RecordDefect | None:
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
_NEGATIVE_SPAN_FIELD = types.MappingProxyType(
    {
        "start": Defect.SPAN_START_NEGATIVE,
        "end": Defect.SPAN_EMPTY_OR_INVERTED,
        "sentence_index": Defect.SPAN_SENTENCE_INDEX_NEGATIVE,
    }
)

span_check = nested(SourceSpan)
spans_check = tuple_of(span_check)


def span_in_source(span: SourceSpan, source_text: str) -> bool:
    """The span's text is exactly the source at its offsets."""
    return source_text[span.start : span.end] == span.text
