"""A deterministic reader: a GSM8K-style word problem in, a ``ProblemFrame`` out.

This is shell code. It feeds the ``unary_delta_transition`` organ, whose ``assess()`` is the
only judge of a frame (ADR-0226 §8.1); the reader decides only what the frame *claims*. A
frame is runnable exactly when the reader bound all four roles, so the reader is the one
place where a misread question could become a wrong answer. It therefore binds roles only
inside a grammar narrow enough to be sure of, and otherwise writes an honest frame that the
contract refuses: no proposal (``proposal_missing``), a role left unbound, or a hazard.

The grammar: two or three sentences and nothing else but whitespace. ``<N>`` is a count
(digits, ``1,200``, ``$12`` or a number word up to twelve) and ``<units>`` the word after it::

    S1  <Name> has|had|owns|owned <N> <units> [in|at|on the|his|her|their <word> [<word>]].
    S2  one change of that entity, in one of four shapes:
        active     [opener] <Name|he|she|they> [then|also|later] <cue> <N> [more|extra|
                   additional|new] [of his|her|their|its|the|<Name>'s] <units> [<tail>].
        container  [opener] <Name|he|she|they> [then|also|later] <cue> a|an <container>
                   of|with <N> <units> [<tail>].
        passive    [opener] <N> of his|her|their|<Name>'s <units> was|were <decrease
                   participle> [and|or <decrease participle>] [by a|an|the <word>].
        added      [opener] <N> [more] <units> was|were added to|into his|her|their <word>.
    S3  How many <units> does|do <Name|he|she|they> have [now|left|in all]?
        How many <units> did <Name|he|she|they> have left|in all?
        How much money does|do <Name|he|she|they> have [now|left]?   (unit: dollar)
        How much money did <Name|he|she|they> have left?

    opener  Then|Later|Next|After that, with or without a comma
    tail    <preposition> <determiner> <word> [<word>], the pair allowed by the cue's
            direction (``ACTIVE_TAILS``): "at the market", "from the store", "to his jar"

The text must hold exactly two counts (one in S1, one in S2), every change cue must lie in
S2, and the question's entity must be S1's. Only the *active* shape binds the direction:
there the cue is the verb of the delta's own clause, in the active voice, with the entity as
subject, so the cue's direction is the entity's. The other shapes ground the change with a
cue that is not bound this way (passive voice, or a container between verb and count); the
reader records the cue and leaves ``direction`` unbound, so the contract refuses with
``direction_unbound``, which the practice loop (ADR-0231 §6) may close by replay exactly
when the frame holds one cue. A third sentence that is not a grammar question leaves the
target unbound. Every count, cue, question target and hazard found anywhere is recorded as
evidence, in text order, whether or not a proposal is made.

Why so narrow: each extra shape is a new way to read a direction, an owner or a moment
wrongly, and a runnable frame is answered without anyone looking again. Rates, fractions,
decimals, other people, comparisons, totals and questions about the start are hazards,
whose blockers come first in every assessment. A value that is not exactly ``str`` (the
frame holds only exact ``str``), longer than ``MAX_QUESTION_LENGTH``, holding a lone
surrogate, or empty/blank is not read at all: ``ReaderRefusal``, checked in that order.
A text whose evidence would not fit the frame's caps (``MAX_FRAME_SPANS``,
``MAX_EVIDENCE_CHARS``, with one span left for a practice candidate, and
``MAX_FRAME_ITEMS``) is refused too (``too_much_evidence``) rather than read with evidence
dropped.
"""

from __future__ import annotations

import bisect
import dataclasses
import enum
import re
from collections.abc import Iterable

from ..kernel import (
    Direction,
    FrameHazard,
    GroundedUnaryDeltaCue,
    HazardCode,
    ProblemFrame,
    QuantityFact,
    QuestionTarget,
    Role,
    RoleBinding,
    SourceSpan,
    StateChangeProposal,
)
from ..kernel.frame import (
    MAX_EVIDENCE_CHARS,
    MAX_FRAME_ITEMS,
    MAX_FRAME_SPANS,
    PROBLEM_FRAME_SCHEMA_VERSION,
    UNARY_DELTA_ORGAN,
    UNARY_DELTA_RELATION,
)
from ..kernel.identity import MAX_SAFE_INT, has_lone_surrogate

__all__ = [
    "MAX_QUESTION_LENGTH",
    "UNSPECIFIED",
    "ReaderRefusal",
    "ReaderRefusalReason",
    "read_question",
]

MAX_QUESTION_LENGTH = 2_000
# Entity or unit of a count the reader cannot attribute: never a grammar unit or name.
UNSPECIFIED = "unspecified"


class ReaderRefusalReason(enum.Enum):
    """Why a value was not read at all, in the order the reader checks (the last one only
    once the text is read: its evidence would not fit a frame)."""

    NOT_TEXT = "not_text"
    TOO_LONG = "too_long"
    LONE_SURROGATE = "lone_surrogate"
    EMPTY = "empty"
    TOO_MUCH_EVIDENCE = "too_much_evidence"


@dataclasses.dataclass(frozen=True, slots=True)
class ReaderRefusal:
    """The reader declined to build a frame; the reason is a closed code, never prose."""

    reason: ReaderRefusalReason


# --------------------------------------------------------------------------------------------
# Lexicons: every word list the reader uses, in one place.

NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}

# Number words the reader does not turn into counts. A text holding one gets no proposal:
# a count the frame does not record must not sit beside the two it binds.
UNREAD_NUMBER_WORDS = (
    "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty "
    "sixty seventy eighty ninety hundred hundreds thousand thousands million millions billion "
    "dozen dozens score pair pairs couple"
).split()

# Change verbs the entity performs: surface form -> direction. Multi-word forms win over
# their one-word prefixes because alternations are tried longest first.
ACTIVE_CUES: dict[str, Direction] = {
    "gives away": Direction.DECREASE,
    "gave away": Direction.DECREASE,
    "throws away": Direction.DECREASE,
    "threw away": Direction.DECREASE,
    "is given": Direction.INCREASE,
    "was given": Direction.INCREASE,
    "buys": Direction.INCREASE,
    "bought": Direction.INCREASE,
    "gets": Direction.INCREASE,
    "got": Direction.INCREASE,
    "finds": Direction.INCREASE,
    "found": Direction.INCREASE,
    "receives": Direction.INCREASE,
    "received": Direction.INCREASE,
    "earns": Direction.INCREASE,
    "earned": Direction.INCREASE,
    "picks": Direction.INCREASE,
    "picked": Direction.INCREASE,
    "adds": Direction.INCREASE,
    "added": Direction.INCREASE,
    "collects": Direction.INCREASE,
    "collected": Direction.INCREASE,
    "wins": Direction.INCREASE,
    "won": Direction.INCREASE,
    "grows": Direction.INCREASE,
    "grew": Direction.INCREASE,
    "gathers": Direction.INCREASE,
    "gathered": Direction.INCREASE,
    "catches": Direction.INCREASE,
    "caught": Direction.INCREASE,
    "gives": Direction.DECREASE,
    "gave": Direction.DECREASE,
    "loses": Direction.DECREASE,
    "lost": Direction.DECREASE,
    "eats": Direction.DECREASE,
    "ate": Direction.DECREASE,
    "drinks": Direction.DECREASE,
    "drank": Direction.DECREASE,
    "sells": Direction.DECREASE,
    "sold": Direction.DECREASE,
    "spends": Direction.DECREASE,
    "spent": Direction.DECREASE,
    "uses": Direction.DECREASE,
    "used": Direction.DECREASE,
    "breaks": Direction.DECREASE,
    "broke": Direction.DECREASE,
    "donates": Direction.DECREASE,
    "donated": Direction.DECREASE,
    "lends": Direction.DECREASE,
    "lent": Direction.DECREASE,
}

# A verb followed by one of these words is not a change ("used to", "found out").
CUE_EXCEPTIONS = {
    "used": ("to",),
    "found": ("out", "that"),
    "got": ("to", "rid"),
}

# Past participles after "was|were": the passive voice, the entity is not the subject.
# Only decreases may follow a possessive count ("5 of his apples were eaten"): an increase
# there ("5 of his apples were added to a pie") would point the wrong way for the owner.
PASSIVE_CUES: dict[str, Direction] = {
    "given away": Direction.DECREASE,
    "thrown away": Direction.DECREASE,
    "eaten": Direction.DECREASE,
    "lost": Direction.DECREASE,
    "stolen": Direction.DECREASE,
    "sold": Direction.DECREASE,
    "used": Direction.DECREASE,
    "broken": Direction.DECREASE,
    "donated": Direction.DECREASE,
    "spent": Direction.DECREASE,
    "taken": Direction.DECREASE,
    "added": Direction.INCREASE,
}

# Where an active change may happen, by direction: (preposition, determiner). An increase
# "to the pie" or a decrease "from the tree" could move things the entity does not hold.
ACTIVE_TAILS: dict[Direction, frozenset[tuple[str, str]]] = {
    Direction.INCREASE: frozenset(
        [(p, d) for p in ("at", "from", "in", "on") for d in ("the", "a", "an")]
        + [(p, d) for p in ("to", "into") for d in ("his", "her", "their")]
    ),
    Direction.DECREASE: frozenset(
        [(p, d) for p in ("at", "in", "on", "to") for d in ("the", "a", "an")]
        + [("from", d) for d in ("his", "her", "their")]
    ),
}

SENTENCE_OPENERS = ("Then", "Later", "Next", "After that")

CONTAINER_NOUNS = (
    "bag",
    "basket",
    "bottle",
    "bowl",
    "box",
    "bucket",
    "bunch",
    "carton",
    "crate",
    "handful",
    "jar",
    "pack",
    "packet",
    "prize",
)

PRONOUNS = ("he", "she", "they")

# Personal pronouns by person. The reader cannot tell a name's gender, so "he" may stand
# for any entity; but two persons in one short text ("He buys ... How many does she
# have?") mean two people, and the grammar then refuses.
PRONOUN_PERSONS = {
    "he": "he",
    "him": "he",
    "his": "he",
    "she": "she",
    "her": "she",
    "hers": "she",
    "they": "they",
    "them": "they",
    "their": "they",
    "theirs": "they",
}

# The unit of a count written with a currency sign. Only "dollar" has a question shape
# ("How much money"), which is what "$" means in the problems this reader targets.
CURRENCY_UNITS = {"$": "dollar", "£": "pound sterling", "€": "euro", "¥": "yen"}

# Capitalized words that are not entities: openers, pronouns, number words, days, months.
NOT_NAMES = frozenset(
    """
    A After Also An And As At But Each Every Finally First For From He Her Here His How If
    In It Its Last Later Many Much Next Now Of On Once Only Our She So Some Still That The
    Their Then There These They This Those Today Tomorrow We What When Where Which While
    Who Why With Yesterday You Your Yes No Not Zero One Two Three Four Five Six Seven Eight
    Nine Ten Eleven Twelve Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
    February March April May June July August September October November December Mr Mrs
    Ms Dr
    """.split()
)

PERSON_NOUNS = (
    "friend friends brother brothers sister sisters mother mom mum father dad parent parents "
    "son sons daughter daughters uncle aunt cousin cousins grandmother grandma grandfather "
    "grandpa grandparents teacher teachers neighbor neighbors neighbour neighbours classmate "
    "classmates kid kids child children boy boys girl girls man men woman women people person "
    "student students family wife husband baby team boss customer customers everyone someone "
    "somebody anyone nobody both"
).split()

# Hazards by code. Single words are looked up in one pass over the text's words (a word
# table is much faster than a long regex alternation); phrases and symbols are patterns.
# Matching ignores case; each match is an evidence span.
HAZARD_WORDS: dict[HazardCode, tuple[str, ...]] = {
    HazardCode.RATE_OR_RATIO: tuple(
        (
            "per each every hourly daily weekly monthly yearly annually apiece times twice "
            "thrice double doubles doubled triple triples tripled quadruple quadrupled ratio "
            "rate average dozen dozens hundred hundreds thousand thousands million millions "
            "billion billions"
        ).split()
    ),
    HazardCode.FRACTION_OR_PERCENT: tuple(
        (
            "half halves quarter quarters third thirds fourth fourths fifth fifths sixth "
            "sixths seventh sevenths eighth eighths ninth ninths tenth tenths percent "
            "percentage fraction fractions"
        ).split()
    ),
    HazardCode.MULTIPLE_ENTITIES: tuple(PERSON_NOUNS),
    HazardCode.UNSUPPORTED_OPERATION: tuple(
        "altogether together combined total sum difference originally initially".split()
    ),
}
HAZARD_PHRASES: dict[HazardCode, tuple[str, ...]] = {
    HazardCode.RATE_OR_RATIO: (
        r"\ban hour\b",
        r"\ba (?:minute|day|week|month|year)\b",
        r"\bas (?:many|much)\b",
    ),
    HazardCode.FRACTION_OR_PERCENT: (
        r"%",
        r"[0-9]+ ?/ ?[0-9]+",
        "[\u00bc-\u00be\u2150-\u215e]",  # vulgar fraction characters: ¼ ½ ¾ ⅓ ...
    ),
    HazardCode.NON_INTEGER_QUANTITY: (r"[$£€¥]?[0-9]*\.[0-9]+",),
    HazardCode.MULTIPLE_ENTITIES: (r"\beach other\b",),
    HazardCode.UNSUPPORTED_OPERATION: (
        # a comparison: "6 more books than", "taller than", or a bare "than"
        r"\b(?:(?:more|less|fewer|[a-z]+er)(?: [a-z]+)? )?than\b",
        r"\bhow (?:many|much) (?:more|less|fewer)\b",
        r"\b(?:at first|in the beginning|to (?:begin|start) with)\b",
        r"\bstart(?:ed|s)? with\b",
    ),
}

# Singular forms the suffix rules would get wrong. Units only need to agree with each
# other, so a rare miss costs a refusal (unit mismatch), never an answer.
IRREGULAR_SINGULARS = {
    "brownies": "brownie",
    "calories": "calorie",
    "children": "child",
    "cookies": "cookie",
    "feet": "foot",
    "geese": "goose",
    "men": "man",
    "mice": "mouse",
    "movies": "movie",
    "people": "person",
    "pies": "pie",
    "potatoes": "potato",
    "teeth": "tooth",
    "ties": "tie",
    "tomatoes": "tomato",
    "women": "woman",
}

# --------------------------------------------------------------------------------------------
# Patterns built from the lexicons. All are linear: no nested quantifier can backtrack
# over the same characters twice, so a 2,000-character hostile text reads in milliseconds.


def _longest_first(words) -> str:
    return "|".join(re.escape(word) for word in sorted(words, key=lambda w: (-len(w), w)))


def _either_case(word: str) -> str:
    """``word`` with its first letter in either case (a number may open a sentence)."""
    return f"[{word[0].upper()}{word[0]}]{re.escape(word[1:])}"


def _quantity_pattern(named: bool) -> str:
    """One count phrase. ``named`` adds the groups the scanner reads; the grammar embeds
    the unnamed form and checks that it covers exactly a phrase the scanner found."""

    def group(name: str, body: str) -> str:
        return f"(?P<{name}>{body})" if named else f"(?:{body})"

    # ASCII digits, optionally grouped by commas. Digits glued to a letter, hyphen, slash,
    # decimal point or percent sign are not counts ("3rd", "120-page", "3/4", "2.5", "5%").
    digits = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?![\w/%-]|[.,][0-9]| ?percent\b)"
    alone = r"(?<![\w.,/$£€¥-])"
    word = r"(?<![\w-])(?:" + "|".join(_either_case(w) for w in NUMBER_WORDS) + r")\b(?!-)"
    function_words = (
        "a|an|and|as|at|by|each|every|for|from|in|into|is|it|less|more|of|on|or|than|that|"
        "the|them|then|these|this|those|to|was|were|with"
    )
    unit = rf"(?!(?:{function_words})\b)[a-z]+\b(?![-'])"
    owner = r"his|her|their|its|the|[A-Z][a-z]+'s"
    money = alone + group("currency", "[$£€¥]") + " ?" + group("money", digits)
    count = group("count", f"{alone}{digits}|{word}")
    suffix = (
        f"(?: {group('modifier', 'more|extra|additional|new')})?"
        f"(?: of {group('owner', owner)})? {group('unit', unit)}"
    )
    return f"(?:{money}|{count}(?:{suffix})?)"


def _opens_with(first_characters: Iterable[str]) -> str:
    """A lookahead for the characters every match of a scanner begins with. It changes no
    match; it lets ``finditer`` pass over every other position in one step instead of
    trying each alternative there."""
    return "(?=[" + "".join(sorted(re.escape(c) for c in set(first_characters))) + "])"


_QUANTITY = re.compile(
    _opens_with(
        [
            *CURRENCY_UNITS,
            *"0123456789",
            *(w[0] for w in NUMBER_WORDS),
            *(w[0].upper() for w in NUMBER_WORDS),
        ]
    )
    + _quantity_pattern(named=True)
)
_QUANTITY_SLOT = "(?P<q>" + _quantity_pattern(named=False) + ")"


def _active_cue_pattern() -> str:
    forms = []
    for surface in sorted(ACTIVE_CUES, key=lambda w: (-len(w), w)):
        blocked = CUE_EXCEPTIONS.get(surface, ())
        guard = f"(?! (?:{'|'.join(blocked)})\\b)" if blocked else ""
        forms.append(re.escape(surface) + r"\b" + guard)
    return "|".join(forms)


_ACTIVE_CUE = _active_cue_pattern()
_PASSIVE_PARTICIPLE = _longest_first(PASSIVE_CUES)
_DECREASE_PARTICIPLE = _longest_first(
    word for word, direction in PASSIVE_CUES.items() if direction is Direction.DECREASE
)
# A passive cue may be coordinated ("were eaten or sold"): both participles are cues.
_CUE_PATTERN = (
    rf"\b(?:(?P<passive>(?:was|were) (?P<participle>{_PASSIVE_PARTICIPLE})\b)"
    rf"(?: (?:and|or) (?P<second>{_PASSIVE_PARTICIPLE})\b)?"
    rf"|(?P<active>{_ACTIVE_CUE}))"
)
_CUE = re.compile(_opens_with(["w", *(surface[0] for surface in ACTIVE_CUES)]) + _CUE_PATTERN)

# Hazards are collected by position in ``HazardCode`` order (an enum's hash is Python code).
_HAZARD_CODES = tuple(HazardCode)
_HAZARD_INDEX = {code: index for index, code in enumerate(_HAZARD_CODES)}
_CHANGES = _HAZARD_INDEX[HazardCode.MULTIPLE_CHANGES]
_ENTITIES = _HAZARD_INDEX[HazardCode.MULTIPLE_ENTITIES]
_HAZARD_BY_WORD = {
    word: _HAZARD_INDEX[code] for code, words in HAZARD_WORDS.items() for word in words
}
# A phrase that can only match where a word occurs (every match of it contains the word) is
# left out of its code's scanner for a text without that word. Alternatives are tried first
# to last at each position, so one that can match nowhere changes no match: the scanner
# without it finds exactly what the full one finds, and skips the costly comparative test.
_PHRASE_NEEDS_WORD = {
    r"\b(?:(?:more|less|fewer|[a-z]+er)(?: [a-z]+)? )?than\b": "than",
}


# The characters each phrase can open with (case-insensitively, as the phrases match). A
# scanner whose every phrase is listed opens with a lookahead for them (``_opens_with``).
_PHRASE_OPENS = {
    r"\ban hour\b": "a",
    r"\ba (?:minute|day|week|month|year)\b": "a",
    r"\bas (?:many|much)\b": "a",
    r"[$£€¥]?[0-9]*\.[0-9]+": "$£€¥0123456789.",
    r"\beach other\b": "e",
    r"\bhow (?:many|much) (?:more|less|fewer)\b": "h",
    r"\b(?:at first|in the beginning|to (?:begin|start) with)\b": "ait",
    r"\bstart(?:ed|s)? with\b": "s",
}


def _phrase_scanner(patterns: Iterable[str]) -> re.Pattern[str]:
    patterns = list(patterns)
    alternatives = "|".join(f"(?:{pattern})" for pattern in patterns)
    if all(pattern in _PHRASE_OPENS for pattern in patterns):
        opens = _opens_with("".join(_PHRASE_OPENS[pattern] for pattern in patterns))
        alternatives = f"{opens}(?:{alternatives})"
    return re.compile(alternatives, re.IGNORECASE)


@dataclasses.dataclass(frozen=True, slots=True)
class _PhraseScanner:
    """One hazard code's phrases: the full scanner and, where some phrase needs a word, the
    words and the scanner without those phrases."""

    index: int
    full: re.Pattern[str]
    needed: re.Pattern[str] | None
    without: re.Pattern[str] | None

    def spans(self, text: str) -> Iterable[tuple[int, int]]:
        scanner = self.full
        if self.needed is not None and self.needed.search(text) is None:
            scanner = self.without  # type: ignore[assignment]
        return (match.span() for match in scanner.finditer(text))


def _phrase_scanners(code: HazardCode, patterns: tuple[str, ...]) -> _PhraseScanner:
    gated = [pattern for pattern in patterns if pattern in _PHRASE_NEEDS_WORD]
    needed = "|".join(re.escape(_PHRASE_NEEDS_WORD[pattern]) for pattern in gated)
    return _PhraseScanner(
        _HAZARD_INDEX[code],
        _phrase_scanner(patterns),
        re.compile(needed, re.IGNORECASE) if gated else None,
        _phrase_scanner(p for p in patterns if p not in gated) if gated else None,
    )


_PHRASE_SCANNERS = tuple(
    _phrase_scanners(code, patterns) for code, patterns in HAZARD_PHRASES.items()
)
_UNREAD_NUMBERS = frozenset(UNREAD_NUMBER_WORDS)
# Whole ASCII words: "Tom's" gives "Tom" and "s"; "café" gives nothing.
_WORD_TOKEN = re.compile(r"\b[A-Za-z]+\b")
_NAME_SHAPE = re.compile(r"[A-Z][a-z]+")
# A sentence runs from a non-space to . ? or ! before whitespace or the end (so "2.5" does
# not split), or to the end of the text.
_SENTENCE = re.compile(r"\S.*?(?:[.?!](?=\s|\Z)|\Z)", re.DOTALL)

# The grammar's sentences (module docstring), each matched whole.
_WORD = r"[a-z]+"
_PLACE = rf"(?: (?:in|at|on) (?:the|his|her|their) {_WORD}(?: {_WORD})?)?"
_SUBJECT = r"(?P<subject>[A-Z][a-z]+|[Hh]e|[Ss]he|[Tt]hey)"
_OPENER = "(?:(?:" + "|".join(SENTENCE_OPENERS) + "),? )?"
_ADVERB = r"(?:(?:then|also|later) )?"
_TAIL = rf"(?: (?P<preposition>{_WORD}) (?P<determiner>{_WORD}) {_WORD}(?: {_WORD})?)?"
_CONTAINER = "|".join(CONTAINER_NOUNS)

_INITIAL_SENTENCE = re.compile(
    rf"(?P<subject>[A-Z][a-z]+) (?:has|had|owns|owned) {_QUANTITY_SLOT}{_PLACE}\."
)
_ACTIVE_SENTENCE = re.compile(
    rf"{_OPENER}{_SUBJECT} {_ADVERB}(?P<cue>{_ACTIVE_CUE}) {_QUANTITY_SLOT}{_TAIL}\."
)
_CONTAINER_SENTENCE = re.compile(
    rf"{_OPENER}{_SUBJECT} {_ADVERB}(?P<cue>{_ACTIVE_CUE}) (?:a|an) (?:{_CONTAINER}) "
    rf"(?:of|with) {_QUANTITY_SLOT}{_TAIL}\."
)
_PASSIVE_SENTENCE = re.compile(
    rf"{_OPENER}{_QUANTITY_SLOT} (?P<cue>(?:was|were) (?:{_DECREASE_PARTICIPLE}))"
    rf"(?: (?:and|or) (?:{_DECREASE_PARTICIPLE}))?(?: by (?:a|an|the) {_WORD})?\."
)
_ADDED_SENTENCE = re.compile(
    rf"{_OPENER}{_QUANTITY_SLOT} (?P<cue>(?:was|were) added) (?:to|into) (?:his|her|their) "
    rf"{_WORD}\."
)
# Question shapes and the unit each fixes (None: the unit is the word after "How many").
_QUESTIONS: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (
        re.compile(
            rf"(?P<target>How many (?P<unit>{_WORD})) (?:does|do) {_SUBJECT} (?:have|has)"
            r"(?: (?:now|left|in all))?\?"
        ),
        None,
    ),
    (
        re.compile(
            rf"(?P<target>How many (?P<unit>{_WORD})) did {_SUBJECT} have (?:left|in all)\?"
        ),
        None,
    ),
    (
        re.compile(rf"(?P<target>How much money) (?:does|do) {_SUBJECT} have(?: now| left)?\?"),
        "dollar",
    ),
    (re.compile(rf"(?P<target>How much money) did {_SUBJECT} have left\?"), "dollar"),
)


# --------------------------------------------------------------------------------------------
# What the scanner finds anywhere in the text, before any grammar.

_Word = tuple[int, int, str]  # start, end, the word


@dataclasses.dataclass(frozen=True, slots=True)
class _Count:
    start: int
    end: int
    value: int
    unit: str
    owner: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class _Cue:
    start: int
    end: int
    direction: Direction


@dataclasses.dataclass(frozen=True, slots=True)
class _Question:
    start: int
    end: int
    unit: str
    subject: str


@dataclasses.dataclass(frozen=True, slots=True)
class _Scan:
    """Everything found in one text, in text order."""

    text: str
    sentences: tuple[tuple[int, int], ...]
    words: tuple[_Word, ...]
    names: tuple[_Word, ...]
    counts: tuple[_Count, ...]
    oversized: bool  # a count too large for an exact fact: recorded nowhere, so no proposal
    cues: tuple[_Cue, ...]
    question: _Question | None


@dataclasses.dataclass(frozen=True, slots=True)
class _Parse:
    """A grammar match: the entity, S2's cue indexes, and which roles the reader is sure of."""

    entity: str
    cue_indexes: tuple[int, ...]
    direction_bound: bool
    target_bound: bool


def _singular(word: str) -> str:
    word = word.lower()
    if word in IRREGULAR_SINGULARS:
        return IRREGULAR_SINGULARS[word]
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    # A word that is only "s" stays itself: a unit is never empty.
    if word.endswith("s") and len(word) > 1 and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# MAX_SAFE_INT has 16 digits, so a count with more significant digits is larger than it.
_SAFE_DIGITS = len(str(MAX_SAFE_INT))


def _digits_value(raw: str) -> int | None:
    """The value of ``raw`` (ASCII digits, maybe grouped by commas), or ``None`` when it has
    more significant digits than ``MAX_SAFE_INT`` and so exceeds it.

    The length is judged before ``int()``, which therefore never sees more than 16 digits:
    the interpreter's integer-string limit (``sys.set_int_max_str_digits``, at least 640) is
    process-global and settable from the environment, and must not decide what a question
    reads as (docs/adr/0003, "Hashable profile"; issue 15).
    """
    significant = raw.replace(",", "").lstrip("0")
    if len(significant) > _SAFE_DIGITS:
        return None
    return int(significant or "0")


def _scan_counts(text: str) -> tuple[list[_Count], bool]:
    counts: list[_Count] = []
    oversized = False
    for match in _QUANTITY.finditer(text):
        value: int | None
        if match["money"] is not None:
            value, unit = _digits_value(match["money"]), CURRENCY_UNITS[match["currency"]]
        else:
            raw = match["count"]
            value = NUMBER_WORDS.get(raw.lower())
            if value is None:
                value = _digits_value(raw)
            unit = _singular(match["unit"]) if match["unit"] else UNSPECIFIED
        # Too large for an exact fact: the same outcome whether or not int() could read it.
        if value is None or value > MAX_SAFE_INT:
            oversized = True
            continue
        counts.append(_Count(match.start(), match.end(), value, unit, match["owner"]))
    return counts, oversized


def _scan_cues(text: str) -> list[_Cue]:
    cues = []
    for match in _CUE.finditer(text):
        if match["active"] is not None:
            cues.append(_Cue(match.start(), match.end(), ACTIVE_CUES[match["active"]]))
            continue
        start, end = match.span("passive")
        cues.append(_Cue(start, end, PASSIVE_CUES[match["participle"]]))
        if match["second"] is not None:
            start, end = match.span("second")
            cues.append(_Cue(start, end, PASSIVE_CUES[match["second"]]))
    return cues


def _scan_question(text: str, sentences: list[tuple[int, int]]) -> _Question | None:
    """The question target, read from the last sentence when it has a grammar shape."""
    if not sentences:
        return None
    start, end = sentences[-1]
    for pattern, fixed_unit in _QUESTIONS:
        match = pattern.fullmatch(text, start, end)
        if match is not None:
            unit = fixed_unit or _singular(match["unit"])
            return _Question(*match.span("target"), unit, match["subject"])
    return None


def _scan(text: str) -> _Scan:
    sentences = [match.span() for match in _SENTENCE.finditer(text)]
    words = [(match.start(), match.end(), match[0]) for match in _WORD_TOKEN.finditer(text)]
    # People are capitalized words: "Tom", not "Then", "Monday" or "TV".
    names = [w for w in words if w[2] not in NOT_NAMES and _NAME_SHAPE.fullmatch(w[2])]
    counts, oversized = _scan_counts(text)
    return _Scan(
        text,
        tuple(sentences),
        tuple(words),
        tuple(names),
        tuple(counts),
        oversized,
        tuple(_scan_cues(text)),
        _scan_question(text, sentences),
    )


# --------------------------------------------------------------------------------------------
# The grammar.


def _refers_to(subject: str, entity: str) -> bool:
    return subject == entity or subject.lower() in PRONOUNS


def _slot_is(match: re.Match[str], count: _Count) -> bool:
    """The grammar's count slot covers exactly the phrase the scanner read."""
    return match.span("q") == (count.start, count.end)


def _cue_is(match: re.Match[str], cue: _Cue) -> bool:
    return match.span("cue") == (cue.start, cue.end)


def _tail_allowed(match: re.Match[str], direction: Direction) -> bool:
    if match["preposition"] is None:
        return True
    return (match["preposition"], match["determiner"]) in ACTIVE_TAILS[direction]


def _read_change(scan: _Scan, entity: str) -> tuple[bool, tuple[int, ...]] | None:
    """S2 as (direction bound?, indexes of its cues), or None outside the grammar."""
    text, (start, end), delta = scan.text, scan.sentences[1], scan.counts[1]
    inside = tuple(i for i, cue in enumerate(scan.cues) if start <= cue.start < end)
    if not inside or len(inside) != len(scan.cues):
        return None  # no change, or a cue outside S2: a change the grammar cannot place
    first = scan.cues[inside[0]]
    for pattern, bound in ((_ACTIVE_SENTENCE, True), (_CONTAINER_SENTENCE, False)):
        match = pattern.fullmatch(text, start, end)
        if (
            match is not None
            and len(inside) == 1
            and _refers_to(match["subject"], entity)
            and _slot_is(match, delta)
            and _cue_is(match, first)
            and _tail_allowed(match, first.direction)
        ):
            return bound, inside
    # Passive: the count must say whose things changed ("5 of his apples").
    match = _PASSIVE_SENTENCE.fullmatch(text, start, end)
    if (
        match is not None
        and delta.owner in ("his", "her", "their", f"{entity}'s")
        and _slot_is(match, delta)
        and _cue_is(match, first)
    ):
        return False, inside
    match = _ADDED_SENTENCE.fullmatch(text, start, end)
    if (
        match is not None
        and len(inside) == 1
        and delta.owner is None
        and _slot_is(match, delta)
        and _cue_is(match, first)
    ):
        return False, inside
    return None


def _parse(scan: _Scan) -> _Parse | None:
    """The narrow grammar of the module docstring, or None when the text is outside it."""
    if scan.oversized or len(scan.sentences) not in (2, 3) or len(scan.counts) != 2:
        return None
    lowered = [word.lower() for _, _, word in scan.words]
    if any(word in _UNREAD_NUMBERS for word in lowered):
        return None
    if len({PRONOUN_PERSONS[word] for word in lowered if word in PRONOUN_PERSONS}) > 1:
        return None
    initial, delta = scan.counts
    if UNSPECIFIED in (initial.unit, delta.unit):
        return None
    first = _INITIAL_SENTENCE.fullmatch(scan.text, *scan.sentences[0])
    if first is None or first["subject"] in NOT_NAMES or not _slot_is(first, initial):
        return None
    entity = first["subject"]
    change = _read_change(scan, entity)
    if change is None:
        return None
    question = scan.question
    target_bound = (
        len(scan.sentences) == 3
        and question is not None
        and question.start >= scan.sentences[2][0]
        and _refers_to(question.subject, entity)
    )
    return _Parse(entity, change[1], change[0], target_bound)


# --------------------------------------------------------------------------------------------
# The frame.


class _Spans:
    """Exact spans of one text; ``sentence_index`` counts . ? ! before the start, as
    ``examples.span_of`` does. One text's equal spans are one record: a count is evidence
    for its fact and often for a hazard too, and records are values."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._marks = [match.start() for match in re.finditer(r"[.?!]", text)]
        self._made: dict[tuple[int, int], SourceSpan] = {}

    def __call__(self, start: int, end: int) -> SourceSpan:
        span = self._made.get((start, end))
        if span is None:
            index = bisect.bisect_left(self._marks, start)
            span = self._made[start, end] = SourceSpan(self._text[start:end], start, end, index)
        return span


def _hazard_spans(scan: _Scan) -> list[set[tuple[int, int]]]:
    """Each hazard's evidence offsets, by position in ``HazardCode`` order."""
    found: list[set[tuple[int, int]]] = [set() for _ in _HAZARD_CODES]
    # "he" and "she" in one text are two people; "they" may be things, so it is not counted.
    persons = []
    for start, end, word in scan.words:
        lowered = word.lower()
        code = _HAZARD_BY_WORD.get(lowered)
        if code is not None:
            found[code].add((start, end))
        person = PRONOUN_PERSONS.get(lowered)
        if person == "he" or person == "she":
            persons.append((start, end, person))
    for phrases in _PHRASE_SCANNERS:
        found[phrases.index].update(phrases.spans(scan.text))
    changes = found[_CHANGES]
    if len(scan.counts) > 2:
        changes.update((count.start, count.end) for count in scan.counts)
    starts = [start for start, _ in scan.sentences]
    cue_sentences = {bisect.bisect_right(starts, cue.start) for cue in scan.cues}
    # Two cues in one sentence may name one change ("were eaten or sold"): the contract
    # shows that as an ambiguous direction. More, or cues in two sentences, are changes.
    if len(cue_sentences) > 1 or len(scan.cues) > 2:
        changes.update((cue.start, cue.end) for cue in scan.cues)
    entities = found[_ENTITIES]
    if scan.names:
        main = scan.names[0][2]
        entities.update((start, end) for start, end, name in scan.names if name != main)
    # The evidence is every pronoun of the person that is not mentioned first.
    if persons:
        first_person = persons[0][2]
        entities.update((start, end) for start, end, who in persons if who != first_person)
    return found


def _hazards(scan: _Scan, span: _Spans) -> tuple[FrameHazard, ...]:
    """One hazard per code that fires, in ``HazardCode`` order, its evidence in text order."""
    found = _hazard_spans(scan)
    return tuple(
        FrameHazard(code, tuple(span(start, end) for start, end in sorted(evidence)))
        for code, evidence in zip(_HAZARD_CODES, found, strict=True)
        if evidence
    )


def _entity_before(names: tuple[_Word, ...], position: int) -> str:
    """The last name before ``position``: whom a count outside the grammar most likely
    belongs to. Evidence only: no role is bound outside the grammar."""
    entity = UNSPECIFIED
    for start, _, name in names:
        if start > position:
            break
        entity = name
    return entity


def _facts(scan: _Scan, parse: _Parse | None, span: _Spans) -> tuple[QuantityFact, ...]:
    return tuple(
        QuantityFact(
            f"q{number}",
            count.value,
            count.unit,
            parse.entity if parse is not None else _entity_before(scan.names, count.start),
            span(count.start, count.end),
        )
        for number, count in enumerate(scan.counts, start=1)
    )


def _target(scan: _Scan, parse: _Parse | None, span: _Spans) -> QuestionTarget | None:
    question = scan.question
    if question is None:
        return None
    if question.subject.lower() not in PRONOUNS:
        entity = question.subject
    elif parse is not None:
        entity = parse.entity
    else:
        entity = scan.names[0][2] if scan.names else UNSPECIFIED
    return QuestionTarget(entity, question.unit, span(question.start, question.end))


def _proposal(
    parse: _Parse,
    facts: tuple[QuantityFact, ...],
    cues: tuple[GroundedUnaryDeltaCue, ...],
    target: QuestionTarget | None,
) -> StateChangeProposal:
    """The bindings in role order; direction and target only where the parse is sure."""
    initial, delta = facts
    bindings = [
        RoleBinding(Role.INITIAL, initial.fact_id, None, (initial.span,)),
        RoleBinding(Role.DELTA, delta.fact_id, None, (delta.span,)),
    ]
    if parse.direction_bound:
        cue = cues[parse.cue_indexes[0]]
        bindings.append(RoleBinding(Role.DIRECTION, None, cue.direction, (cue.span,)))
    if parse.target_bound and target is not None:
        bindings.append(RoleBinding(Role.TARGET, None, None, (target.span,)))
    return StateChangeProposal(UNARY_DELTA_RELATION, tuple(bindings))


def _fits_a_frame(
    facts: tuple[QuantityFact, ...],
    cues: tuple[GroundedUnaryDeltaCue, ...],
    proposals: tuple[StateChangeProposal, ...],
    target: QuestionTarget | None,
    hazards: tuple[FrameHazard, ...],
) -> bool:
    """Whether the evidence stays inside the frame's caps (``ProblemFrame.all_spans``).

    One span is kept free: a practice candidate adds the cue span to the direction
    binding, and it must still fit. Dropping evidence to fit would hide counts or hazards,
    so a text that does not fit is refused instead.
    """
    spans = [fact.span for fact in facts] + [cue.span for cue in cues]
    spans += [span for p in proposals for binding in p.bindings for span in binding.evidence_spans]
    spans += [] if target is None else [target.span]
    spans += [span for hazard in hazards for span in hazard.evidence_spans]
    free_span = max((len(cue.span.text) for cue in cues), default=0)
    items = len(facts) + len(cues) + len(hazards) + sum(1 + len(p.bindings) for p in proposals)
    return (
        items <= MAX_FRAME_ITEMS
        and len(spans) < MAX_FRAME_SPANS
        and sum(len(span.text) for span in spans) + free_span <= MAX_EVIDENCE_CHARS
    )


def _refusal(question: object) -> ReaderRefusal | None:
    if type(question) is not str:
        return ReaderRefusal(ReaderRefusalReason.NOT_TEXT)
    if len(question) > MAX_QUESTION_LENGTH:
        return ReaderRefusal(ReaderRefusalReason.TOO_LONG)
    if has_lone_surrogate(question):
        return ReaderRefusal(ReaderRefusalReason.LONE_SURROGATE)
    if not question.strip():
        return ReaderRefusal(ReaderRefusalReason.EMPTY)
    return None


def read_question(question: object) -> ProblemFrame | ReaderRefusal:
    """Read one word problem into a frame for the ``unary_delta_transition`` organ.

    Never raises. Returns ``ReaderRefusal`` for a value that is not exactly ``str``, longer
    than ``MAX_QUESTION_LENGTH``, holding a lone surrogate, empty/blank, or holding more
    evidence than a frame may carry; otherwise a well-formed frame whose ``source_text`` is
    ``question`` unchanged.
    """
    refusal = _refusal(question)
    if refusal is not None:
        return refusal
    assert type(question) is str  # for the type checker: _refusal has proved it
    scan = _scan(question)
    parse = _parse(scan)
    span = _Spans(question)
    facts = _facts(scan, parse, span)
    cues = tuple(
        GroundedUnaryDeltaCue(cue.direction, span(cue.start, cue.end)) for cue in scan.cues
    )
    target = _target(scan, parse, span)
    proposals = () if parse is None else (_proposal(parse, facts, cues, target),)
    hazards = _hazards(scan, span)
    if not _fits_a_frame(facts, cues, proposals, target, hazards):
        return ReaderRefusal(ReaderRefusalReason.TOO_MUCH_EVIDENCE)
    return ProblemFrame(
        PROBLEM_FRAME_SCHEMA_VERSION,
        UNARY_DELTA_ORGAN,
        question,
        facts,
        cues,
        proposals,
        target,
        hazards,
    )
