"""Primitive strategies: digests, versions, codes, hostile text and values, and exact spans.

Text is hostile on purpose: combining marks, astral characters, NUL and other control
characters all appear in valid text; lone surrogates appear only in the malformed strategies,
because a string holding one cannot be encoded as UTF-8 and so can never be hashed.
"""

from __future__ import annotations

import string

from hypothesis import strategies as st

from practice_loop.kernel import SourceSpan

HEX = "0123456789abcdef"

digests = st.text(HEX, min_size=64, max_size=64)
"""Valid full lowercase SHA-256 hex digests."""

malformed_digests = st.one_of(
    st.text(HEX, min_size=0, max_size=63),
    st.text(HEX, min_size=65, max_size=80),
    st.text(HEX.upper(), min_size=64, max_size=64).filter(lambda s: s != s.lower()),
    st.text(HEX + "g-", min_size=64, max_size=64).filter(lambda s: not set(s) <= set(HEX)),
)
"""Strings that look like digests but are short, long, upper-case or non-hex."""

codes = st.from_regex(r"[a-z][a-z0-9_]{0,15}", fullmatch=True)
versions = st.builds(
    lambda name, number: f"{name}.v{number}",
    st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True),
    st.integers(1, 99),
)
malformed_versions = st.one_of(
    st.just(""),
    st.just("compute_budget"),
    st.just("compute_budget.v0"),
    st.just("Compute_Budget.v1"),
    st.just("compute_budget.V1"),
    st.text(string.punctuation, min_size=1, max_size=8),
)

# One example each of what breaks naive text handling: NUL and other controls, combining
# marks (alone and stacked), zero-width and bidi characters, a BOM, astral characters
# (emoji, a regional-indicator pair, Gothic) and right-to-left scripts.
HOSTILE_CHUNKS = (
    "\x00",
    "\x01\x1f\x7f",
    "\u0301",
    "e\u0301\u0308\u20dd",
    "\u200b\u200d\u2066",
    "\ufeff",
    "\U0001f600",
    "\U0001f1eb\U0001f1f7",
    "\U00010348",
    "\u05d0\u0644",
)

hostile_characters = st.characters(codec="utf-8")
"""Any code point UTF-8 can encode (surrogates excluded): controls, marks, astral included."""


class _EqualsEveryClass(type):
    def __eq__(cls, other: object) -> bool:
        return True

    def __ne__(cls, other: object) -> bool:
        return False

    __hash__ = type.__hash__


class Impostor(metaclass=_EqualsEveryClass):
    """A value whose class says it equals every class: ``type(value) == int`` holds and
    ``type(value) is int`` does not. The kernel asks an input's type by identity, so it must
    refuse an impostor as the wrong type, never take it for an int, a bool or a tuple, and
    never read the ``attributes`` it is given (``Impostor(version="compute_budget.v1")``)."""

    def __init__(self, **attributes: object) -> None:
        self.__dict__.update(attributes)


class RaisingImpostor(Impostor):
    """An Impostor that raises when it is compared or hashed: whatever asks its type by
    ``==`` and goes on to compare or look it up fails loudly instead of refusing it."""

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("compared")

    def __hash__(self) -> int:
        raise RuntimeError("hashed")


def _with_hostile_chunk(max_size: int) -> st.SearchStrategy[str]:
    # Drawing characters one by one from a mixed alphabet is slow; plain ``characters`` text
    # with one hostile chunk spliced in at a drawn position keeps every hostile family in play.
    return st.builds(
        lambda base, chunk, cut: (
            base[: cut % (len(base) + 1)] + chunk + base[cut % (len(base) + 1) :]
        ),
        st.text(hostile_characters, max_size=max_size),
        st.sampled_from(("",) + HOSTILE_CHUNKS),
        st.integers(0, max_size),
    ).filter(bool)


span_texts = _with_hostile_chunk(20)
"""Non-empty, surrogate-free text, hostile in every other way."""

labels = _with_hostile_chunk(8)

lone_surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
texts_with_lone_surrogate = st.builds(
    lambda before, surrogate, after: before + surrogate + after,
    st.text(st.characters(codec="utf-8"), max_size=5),
    lone_surrogates,
    st.text(st.characters(codec="utf-8"), max_size=5),
)

source_texts = _with_hostile_chunk(60)


@st.composite
def spans_in(draw: st.DrawFn, source: str) -> SourceSpan:
    """An exact, non-empty slice of ``source``."""
    start = draw(st.integers(0, len(source) - 1))
    end = draw(st.integers(start + 1, len(source)))
    sentence_index = draw(st.integers(0, 8))
    return SourceSpan(source[start:end], start, end, sentence_index)


@st.composite
def spans(draw: st.DrawFn) -> SourceSpan:
    """A well-formed span with its own text (not tied to any source)."""
    text = draw(span_texts)
    start = draw(st.integers(0, 10_000))
    return SourceSpan(text, start, start + len(text), draw(st.integers(0, 64)))


def span_sequences(
    min_size: int = 0, max_size: int = 6
) -> st.SearchStrategy[tuple[SourceSpan, ...]]:
    """Ordered span tuples that keep duplicates: some entries are drawn again on purpose."""

    @st.composite
    def build(draw: st.DrawFn) -> tuple[SourceSpan, ...]:
        pool = draw(st.lists(spans(), min_size=max(1, min_size), max_size=max(1, max_size)))
        picks = draw(st.lists(st.sampled_from(pool), min_size=min_size, max_size=max_size))
        return tuple(picks)

    return build()
