"""``read_question``: the deterministic text reader that feeds the ``unary_delta_transition``
organ (shell code, ``src/practice_loop/product/reader.py``).

Clauses: ADR-0226 §4 (``wrong_ids == []``: a reader binds roles only where it is sure),
§8.1 (``assess`` alone judges the frame the reader writes), ADR-0231 §6 (a direction left
unbound with exactly one grounded cue is what the first operator may close), docs/adr/0005
(frame shape, hazards, blocker order, proof obligations).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import practice_loop.kernel as kernel_package
import practice_loop.product.reader as reader_module
from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import (
    MAX_SAFE_INT,
    AssessmentStatus,
    ContractAssessment,
    Direction,
    HazardCode,
    ProblemFrame,
    ProofRecord,
    ProofStatus,
    Role,
    RoleBinding,
    StateChangeProposal,
    assess,
    check_proof,
    problem_frame_digest,
)
from practice_loop.kernel.frame import MAX_FRAME_SPANS
from practice_loop.kernel.record import inspect_record
from practice_loop.product.reader import (
    MAX_QUESTION_LENGTH,
    ReaderRefusal,
    ReaderRefusalReason,
    _digits_value,
    read_question,
)

DATA = resources.files("practice_loop") / "data"

# --------------------------------------------------------------------------------------------
# Helpers


def frame_of(question: str) -> ProblemFrame:
    frame = read_question(question)
    assert type(frame) is ProblemFrame, frame
    return frame


def assessed(frame: ProblemFrame) -> ContractAssessment:
    assessment = assess(frame)
    assert type(assessment) is ContractAssessment, assessment
    return assessment


def proved(frame: ProblemFrame) -> ProofRecord:
    proof = check_proof(frame, assessed(frame))
    assert type(proof) is ProofRecord, proof
    return proof


def with_cue_direction(frame: ProblemFrame) -> ProblemFrame:
    """The candidate ADR-0231 §6 allows: the frame's one cue bound into ``direction``."""
    (cue,) = frame.cues
    (proposal,) = frame.proposals
    bindings = list(proposal.bindings)
    after_delta = [binding.role for binding in bindings].index(Role.DELTA) + 1
    bindings.insert(after_delta, RoleBinding(Role.DIRECTION, None, cue.direction, (cue.span,)))
    candidate = StateChangeProposal(proposal.relation_type, tuple(bindings))
    return dataclasses.replace(frame, proposals=(candidate,))


def outcome(frame: ProblemFrame) -> tuple[str, int | None]:
    """The path a frame takes: answered, refused by proof, practice, or the first blocker."""
    assessment = assessed(frame)
    if assessment.status is AssessmentStatus.RUNNABLE:
        proof = proved(frame)
        closed = proof.status is ProofStatus.CLOSED
        return ("answered", proof.derived_value) if closed else ("proof_refused", None)
    codes = [blocker.code.value for blocker in assessment.blockers]
    if codes != ["direction_unbound"]:
        return codes[0], None
    if len(frame.cues) != 1:
        return "practice_ambiguous", None
    proof = proved(with_cue_direction(frame))
    if proof.status is ProofStatus.CLOSED:
        return "practice_answers", proof.derived_value
    return "practice_proof_refused", None


def gold(answer: str) -> str:
    return answer.rsplit("####", 1)[1].strip()


def assert_exact_spans(frame: ProblemFrame) -> None:
    text = frame.source_text
    for span in frame.all_spans():
        assert text[span.start : span.end] == span.text
        assert span.sentence_index == sum(text[: span.start].count(mark) for mark in ".?!")


# --------------------------------------------------------------------------------------------
# Bad values are refused with their exact reason; nothing raises


class Text(str):
    """A ``str`` subclass: the frame holds only exact ``str``, so the reader refuses it."""


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, ReaderRefusalReason.NOT_TEXT),
        (42, ReaderRefusalReason.NOT_TEXT),
        (b"Tom has 12 apples.", ReaderRefusalReason.NOT_TEXT),
        (["Tom has 12 apples."], ReaderRefusalReason.NOT_TEXT),
        (Text("Tom has 12 apples."), ReaderRefusalReason.NOT_TEXT),
        ("", ReaderRefusalReason.EMPTY),
        (" \t\r\n\u00a0\u2003", ReaderRefusalReason.EMPTY),
        ("a" * (MAX_QUESTION_LENGTH + 1), ReaderRefusalReason.TOO_LONG),
        ("How many apples? \ud800", ReaderRefusalReason.LONE_SURROGATE),
        ("\udfff", ReaderRefusalReason.LONE_SURROGATE),
        ("\ud83d\ude00", ReaderRefusalReason.LONE_SURROGATE),  # a pair split in code points
        # Checked in order: length before surrogates, surrogates before blankness.
        ("\ud800" * (MAX_QUESTION_LENGTH + 1), ReaderRefusalReason.TOO_LONG),
        (" \ud800 ", ReaderRefusalReason.LONE_SURROGATE),
    ],
)
def test_bad_values_are_refused_with_their_reason(value, reason):
    """The four refusals, each with its exact closed reason, in the documented order."""
    assert read_question(value) == ReaderRefusal(reason)


def test_the_length_limit_is_inclusive():
    """A question of exactly ``MAX_QUESTION_LENGTH`` characters is read."""
    question = ("Tom has 12 apples. " * 200)[:MAX_QUESTION_LENGTH]
    assert type(read_question(question)) is ProblemFrame


@pytest.mark.obligation("LOCAL-0005/frame_caps")
def test_text_with_more_evidence_than_a_frame_holds_is_refused():
    """docs/adr/0005 caps a frame's spans; the reader refuses rather than drop evidence,
    and keeps one span free for the cue a practice candidate adds (ADR-0231 §6)."""
    assert read_question("1 " * 1000) == ReaderRefusal(ReaderRefusalReason.TOO_MUCH_EVIDENCE)
    assert read_question("each " * 300) == ReaderRefusal(ReaderRefusalReason.TOO_MUCH_EVIDENCE)
    frame = frame_of("each " * (MAX_FRAME_SPANS - 1))
    assert len(frame.all_spans()) == MAX_FRAME_SPANS - 1
    assert read_question("each " * MAX_FRAME_SPANS) == ReaderRefusal(
        ReaderRefusalReason.TOO_MUCH_EVIDENCE
    )


def expected_refusal(question: str) -> ReaderRefusalReason | None:
    if len(question) > MAX_QUESTION_LENGTH:
        return ReaderRefusalReason.TOO_LONG
    if any("\ud800" <= char <= "\udfff" for char in question):
        return ReaderRefusalReason.LONE_SURROGATE
    if not question.strip():
        return ReaderRefusalReason.EMPTY
    return None


def check_frame_or_refusal(question: str) -> None:
    """What every str must satisfy: a refusal with the right reason, or a well-formed frame
    with exact spans that the organ judges (it never refuses it as malformed)."""
    result = read_question(question)
    expected = expected_refusal(question)
    if expected is not None:
        assert result == ReaderRefusal(expected)
        return
    if type(result) is ReaderRefusal:
        # Only a text with hundreds of counts, cues or hazard words can overflow a frame.
        assert result.reason is ReaderRefusalReason.TOO_MUCH_EVIDENCE
        assert len(question) >= MAX_FRAME_SPANS // 2
        return
    assert type(result) is ProblemFrame
    assert result.source_text is question
    assert inspect_record(result, ProblemFrame) is None
    assert_exact_spans(result)
    assessed(result)


@given(st.text(st.characters(), max_size=400))
@example("\x00\x01\x1b[0m\x7f")
@example("Tom has 12 apples.\x00 He buys 5 apples.\x07 How many apples does Tom have now?")
@example("1 " * 1000)
@example("$99999999999999999999. He buys 5 apples.")
# Found by `practice-loop fuzz-bytes --target question` (issue 19): the count's word "s" was
# made singular by dropping its "s", an empty unit, and the frame raised RecordError.
@example("Sam has 15 marbles. He loses 6 s. How many marbles does Sam have now?")
def test_any_text_gives_a_refusal_or_a_well_formed_frame(question):
    """Never raises; any text, surrogates and control characters included."""
    check_frame_or_refusal(question)


GRAMMAR_TOKENS = (
    "Tom",
    "Ann",
    "has",
    "had",
    "12",
    "5",
    "1,200",
    "$7",
    "3.5",
    "3/4",
    "five",
    "apples",
    "apple",
    "s",
    "more",
    "of his",
    "He",
    "she",
    "Then",
    "buys",
    "gives away",
    "were eaten",
    "or sold",
    "a box of",
    "at the store",
    ".",
    "?",
    "How many",
    "How much money",
    "does",
    "have",
    "now",
    "left",
    "each",
    "half",
    "\x00",
    "\u00e9",
    "\U0001f600",
    "\n",
)
grammar_like = st.lists(st.sampled_from(GRAMMAR_TOKENS), max_size=40).map(" ".join)


@given(grammar_like)
def test_grammar_like_text_gives_a_well_formed_frame(question):
    """Texts made of the grammar's own words reach every branch of the reader."""
    check_frame_or_refusal(question)


@given(st.one_of(grammar_like, st.text(st.characters(), max_size=200)))
def test_reading_is_deterministic(question):
    """Same input, equal frame and equal ``problem_frame_digest`` (ADR-0226 §9)."""
    first, second = read_question(question), read_question("".join(list(question)))
    assert first == second
    if type(first) is ProblemFrame:
        assert problem_frame_digest(first) == problem_frame_digest(second)


# --------------------------------------------------------------------------------------------
# Generated problems with a known answer: the reader answers it or refuses, never otherwise

NAMES = ("Tom", "Mia", "Sam", "Lena", "Omar")
UNITS = ("apples", "stickers", "marbles", "boxes", "cookies", "berries")
ACTIVE = (
    ("buys", 1),
    ("bought", 1),
    ("finds", 1),
    ("is given", 1),
    ("wins", 1),
    ("collects", 1),
    ("gives away", -1),
    ("loses", -1),
    ("eats", -1),
    ("sold", -1),
    ("uses", -1),
)
PASSIVE = (("were eaten", -1), ("were lost", -1), ("were stolen", -1), ("were given away", -1))
QUESTIONS = (
    "How many {unit} does {who} have?",
    "How many {unit} does {who} have now?",
    "How many {unit} does {who} have left?",
    "How many {unit} did {who} have left?",
)


@st.composite
def known_problems(draw) -> tuple[str, int, bool]:
    """(question, true answer, active voice?) from the grammar's own shapes."""
    name, unit = draw(st.sampled_from(NAMES)), draw(st.sampled_from(UNITS))
    initial, delta = draw(st.integers(0, 5000)), draw(st.integers(0, 5000))
    pronoun = draw(st.sampled_from(("he", "she", "they")))
    active = draw(st.booleans())
    if active:
        verb, sign = draw(st.sampled_from(ACTIVE))
        subject = draw(st.sampled_from((name, pronoun.capitalize())))
        more = draw(st.sampled_from(("", "more ")))
        change = f"{subject} {verb} {delta:,} {more}{unit}."
    else:
        verb, sign = draw(st.sampled_from(PASSIVE))
        owner = {"he": "his", "she": "her", "they": "their"}[pronoun]
        change = f"Then {delta} of {owner} {unit} {verb}."
    who = draw(st.sampled_from((name, pronoun)))
    ask = draw(st.sampled_from(QUESTIONS)).format(unit=unit, who=who)
    return f"{name} has {initial} {unit}. {change} {ask}", initial + sign * delta, active


@pytest.mark.obligation("ADR-0226/13.8")
@given(known_problems())
def test_generated_problems_are_answered_right_or_refused(problem):
    """ADR-0226 §4: an answer, direct or after practice, is the true one; a negative true
    result is refused by the proof, never answered."""
    question, answer, active = problem
    path, value = outcome(frame_of(question))
    if answer < 0:
        assert path == ("proof_refused" if active else "practice_proof_refused")
    else:
        assert (path, value) == (("answered" if active else "practice_answers"), answer)


# --------------------------------------------------------------------------------------------
# The frames the reader writes


def test_the_reader_writes_the_hand_built_example_frames():
    """examples.py was written as the reader would write it: the reader reproduces it."""
    examples = {example.name: example.frame for example in shipped_examples()}
    for name in ("direction_unbound", "runnable_increase", "proof_refused"):
        assert read_question(examples[name].source_text) == examples[name]


def test_an_active_change_binds_every_role_with_its_evidence():
    question = "Mia has 7 stickers. She buys 4 more stickers. How many stickers does Mia have now?"
    frame = frame_of(question)
    assert [(f.fact_id, f.value, f.unit, f.entity, f.span.text) for f in frame.facts] == [
        ("q1", 7, "sticker", "Mia", "7 stickers"),
        ("q2", 4, "sticker", "Mia", "4 more stickers"),
    ]
    assert [(c.direction, c.span.text) for c in frame.cues] == [(Direction.INCREASE, "buys")]
    assert (frame.target.entity, frame.target.unit, frame.target.span.text) == (
        "Mia",
        "sticker",
        "How many stickers",
    )
    (proposal,) = frame.proposals
    assert [
        (b.role, b.fact_id, b.direction, [s.text for s in b.evidence_spans])
        for b in proposal.bindings
    ] == [
        (Role.INITIAL, "q1", None, ["7 stickers"]),
        (Role.DELTA, "q2", None, ["4 more stickers"]),
        (Role.DIRECTION, None, Direction.INCREASE, ["buys"]),
        (Role.TARGET, None, None, ["How many stickers"]),
    ]
    assert frame.hazards == ()


@pytest.mark.parametrize(
    ("question", "cue"),
    [
        (
            "Tom had 12 apples. Then 5 of his apples were eaten by a horse. "
            "How many apples does Tom have now?",
            "were eaten",
        ),
        (
            "Leo has 9 crayons. He buys a box of 24 crayons. How many crayons does Leo have now?",
            "buys",
        ),
    ],
)
def test_a_cue_not_bound_to_its_count_leaves_the_direction_unbound(question, cue):
    """Passive voice, or a container between verb and count: the cue is recorded, the
    direction is not bound, and the contract refuses with ``direction_unbound`` only."""
    frame = frame_of(question)
    assert [c.span.text for c in frame.cues] == [cue]
    (proposal,) = frame.proposals
    assert proposal.binding(Role.DIRECTION) is None
    blockers = assessed(frame).blockers
    assert [b.code.value for b in blockers] == ["direction_unbound"]
    assert blockers[0].evidence_spans[-1] == frame.cues[0].span


@pytest.mark.parametrize(
    ("question", "code", "words"),
    [
        ("Ravi earns $9 per hour. He works 5 hours.", HazardCode.RATE_OR_RATIO, ["per"]),
        ("Uma finds 3 times as many shells.", HazardCode.RATE_OR_RATIO, ["times", "as many"]),
        ("Tia gives away half of 40 marbles.", HazardCode.FRACTION_OR_PERCENT, ["half"]),
        ("Noah sells 25% or 3/4 of them.", HazardCode.FRACTION_OR_PERCENT, ["%", "3/4"]),
        ("There are 24 toys and ¼ are dolls.", HazardCode.FRACTION_OR_PERCENT, ["¼"]),
        ("Ana spends $3.25 on 1.5 pies.", HazardCode.NON_INTEGER_QUANTITY, ["$3.25", "1.5"]),
        ("Tom gives 5 apples to Ann.", HazardCode.MULTIPLE_ENTITIES, ["Ann"]),
        ("His sister gives him 4 shells.", HazardCode.MULTIPLE_ENTITIES, ["sister"]),
        ("Jon has 6 more books than Maya.", HazardCode.MULTIPLE_ENTITIES, ["Maya"]),
        (
            "Tom has 12 apples. He buys 5 apples. How many apples does she have?",
            HazardCode.MULTIPLE_ENTITIES,
            ["she"],
        ),
        ("Jon has 6 more books than Maya.", HazardCode.UNSUPPORTED_OPERATION, ["more books than"]),
        ("Ann is taller than Jon.", HazardCode.UNSUPPORTED_OPERATION, ["taller than"]),
        ("How many pens does he have in total?", HazardCode.UNSUPPORTED_OPERATION, ["total"]),
        ("How many did she have at first?", HazardCode.UNSUPPORTED_OPERATION, ["at first"]),
        (
            "Ella has 10 pens, buys 4 and loses 3.",
            HazardCode.MULTIPLE_CHANGES,
            ["10 pens", "4", "3"],
        ),
        (
            "Finn bought 3 kites. He found 2 kites.",
            HazardCode.MULTIPLE_CHANGES,
            ["bought", "found"],
        ),
    ],
)
def test_hazard_evidence_is_the_words_that_triggered_it(question, code, words):
    frame = frame_of(question)
    (hazard,) = [hazard for hazard in frame.hazards if hazard.code is code]
    assert [span.text for span in hazard.evidence_spans] == words
    assert assessed(frame).status is AssessmentStatus.REFUSED


@pytest.mark.obligation("ADR-0226/13.8")
@pytest.mark.parametrize(
    "question",
    [
        # a second person, by name, by pronoun, or as the giver
        "Tom has 12 apples. She buys 5 apples. How many apples does he have now?",
        "Tom has 12 apples. Ann buys 5 apples. How many apples does Tom have now?",
        "Liam has 9 shells. His sister gives him 4 shells. How many shells does Liam have now?",
        # the change may not touch what the entity holds
        "Tom has 12 apples. He eats 5 apples from the tree. How many apples does Tom have now?",
        "Tom has 12 apples. He adds 5 apples to the pie. How many apples does Tom have now?",
        "Tom has 12 apples. He uses 5 apples to bake a pie. How many apples does Tom have now?",
        "Tom has 12 apples. He bought 5 apples yesterday. How many apples does Tom have now?",
        "Tom has 12 apples. He had bought 5 apples. How many apples does Tom have now?",
        "Tom has 12 apples. Then 5 apples were eaten. How many apples does Tom have now?",
        "Tom has 12 apples. Then 5 of his apples were added to a pie. How many apples does "
        "Tom have now?",
        # the question is not about the result
        "Tom had 12 apples. He lost 5 apples. How many apples did he have?",
        "Tom had 12 apples. He lost 5 apples. How many apples did he lose?",
        # a count the frame does not hold, or no unit
        "Tom has 12 apples. He buys twenty apples. How many apples does Tom have now?",
        "Tom has 12 apples. He gives away 5. How many apples does Tom have left?",
        "Tom has 12 apples. He buys 5 apples, then 2 apples. How many apples does Tom have?",
    ],
)
def test_near_misses_are_not_answered(question):
    """Each sentence is one small step outside the grammar: no answer, and no replay
    that the first operator could close."""
    path, _ = outcome(frame_of(question))
    assert path not in ("answered", "practice_answers"), path


# --------------------------------------------------------------------------------------------
# The shipped samples (data/README.md), each with its expected path

EXPECTED = {
    "s01": "answered",
    "s02": "answered",
    "s03": "answered",
    "s04": "answered",
    "s05": "answered",
    "s06": "answered",
    "s07": "answered",
    "s08": "answered",
    "s09": "answered",
    "s10": "answered",
    "s11": "practice_answers",
    "s12": "practice_answers",
    "s13": "practice_answers",
    "s14": "practice_answers",
    "s15": "practice_answers",
    "s16": "practice_answers",
    "s17": "practice_answers",
    "s18": "practice_proof_refused",
    "s19": "practice_proof_refused",
    "s20": "practice_ambiguous",
    "s21": "practice_ambiguous",
    "s22": "proof_refused",
    "s23": "proof_refused",
    "s24": "hazard_multiple_changes",
    "s25": "hazard_multiple_changes",
    "s26": "hazard_rate_or_ratio",
    "s27": "hazard_rate_or_ratio",
    "s28": "hazard_rate_or_ratio",
    "s29": "hazard_fraction_or_percent",
    "s30": "hazard_fraction_or_percent",
    "s31": "hazard_non_integer_quantity",
    "s32": "hazard_multiple_entities",
    "s33": "hazard_multiple_entities",
    "s34": "hazard_unsupported_operation",
    "s35": "hazard_unsupported_operation",
    "s36": "proposal_missing",
    "s37": "proposal_missing",
    "s38": "proposal_missing",
    "s39": "target_unbound",
    "s40": "target_unbound",
    "s41": "unit_mismatch",
    "s42": "unit_mismatch",
    "s43": "hazard_multiple_entities",
}


def sample_rows() -> list[dict]:
    text = (DATA / "sample.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def test_the_sample_table_covers_every_line_once():
    rows = sample_rows()
    assert [row["id"] for row in rows] == list(EXPECTED)
    assert 36 <= len(rows) <= 48


@pytest.mark.obligation("ADR-0226/13.8")
@pytest.mark.parametrize("row", sample_rows(), ids=lambda row: row["id"])
def test_each_sample_takes_its_expected_path(row):
    """Answers, direct or after practice, equal the gold number; everything else refuses."""
    path, value = outcome(frame_of(row["question"]))
    assert path == EXPECTED[row["id"]]
    if path in ("answered", "practice_answers"):
        assert str(value) == gold(row["answer"])


MALFORMED = [
    "not_json",
    "no_question",
    ReaderRefusalReason.NOT_TEXT,
    ReaderRefusalReason.NOT_TEXT,
    "proposal_missing",
    "proposal_missing",
    ReaderRefusalReason.LONE_SURROGATE,
    ReaderRefusalReason.TOO_LONG,
    ReaderRefusalReason.EMPTY,
    ReaderRefusalReason.EMPTY,
]


def test_each_malformed_line_is_refused_where_it_should_be():
    """A loader refuses what is not a problem; the reader refuses what is not text."""
    lines = (DATA / "sample_malformed.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(MALFORMED)
    for line, expected in zip(lines, MALFORMED, strict=True):
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            assert expected == "not_json"
            continue
        if "question" not in row:
            assert expected == "no_question"
            continue
        result = read_question(row["question"])
        if type(result) is ReaderRefusal:
            assert result.reason is expected, row["id"]
        else:
            assert outcome(result)[0] == expected, row["id"]


# --------------------------------------------------------------------------------------------
# The scanners' shortcuts (issue 3) find exactly what the plain patterns find.

_SCANNER_WORDS = st.sampled_from(
    [
        "Tom", "he", "She", "has", "had", "5", "12", "1,200", "$3", "£40", "five", "Twelve",
        "apples", "more", "less", "fewer", "taller", "than", "THAN", "Than", "how", "How",
        "many", "much", "at", "first", "in", "the", "beginning", "to", "begin", "start",
        "started", "starts", "with", "ate", "gave", "were", "eaten", "sold", "or", "and",
        "an", "hour", "a", "day", "as", "3/4", "50%", "2.5", "\u017ftart", "\u0131n", ".", "?",
        "each", "other", "EACH", "\u20ac3.50", ".75", "week", "AN", "HOUR",
    ]
)
_SCANNER_TEXTS = st.lists(_SCANNER_WORDS, max_size=30).map(" ".join)


@pytest.mark.obligation("LOCAL-0005/frame_schema")
@example("Tom is taller than Ann. How many more apples than pears?")
# Every phrase of every hazard, without "than" and then with it.
@example(
    "At first Tom started with 5 apples; in the beginning, to begin with, to start with, he "
    "eats as many as each other, an hour a day, for $3.50 or .75 of 3/4 (50%). How many more?"
)
@example("Start with an hour as much as Ann: each other, than a week. HOW MUCH LESS? 1.5 \u00bd")
@given(_SCANNER_TEXTS | st.text(max_size=80))
def test_scanner_shortcuts_find_exactly_what_the_plain_patterns_find(text):
    """The quantity, cue and phrase scanners open with a lookahead for their first
    characters, and a hazard phrase that needs a word ("than") is left out of a text without
    it; each match, its span and its groups are what the plain pattern gives, so no frame
    changes."""
    import re

    from practice_loop.product import reader

    def matches(pattern, text):
        return [(m.span(), m.groupdict()) for m in pattern.finditer(text)]

    plain_quantity = re.compile(reader._quantity_pattern(named=True))
    assert matches(reader._QUANTITY, text) == matches(plain_quantity, text)
    plain_cue = re.compile(reader._CUE_PATTERN)
    assert matches(reader._CUE, text) == matches(plain_cue, text)
    for code, patterns in reader.HAZARD_PHRASES.items():
        plain = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
        (phrases,) = [s for s in reader._PHRASE_SCANNERS if s.index == list(HazardCode).index(code)]
        assert list(phrases.spans(text)) == [m.span() for m in plain.finditer(text)]


# --------------------------------------------------------------------------------------------
# The interpreter's integer-string limit decides nothing (issue 15)

_LONG_DIGITS = r'''
import json, sys

from practice_loop.kernel import (
    CanonicalizationError,
    ProblemFrame,
    ProofGatedAnswer,
    decode_canonical,
    load_sealed_trace,
    practice_case,
    sealed_trace_bytes,
)
from practice_loop.product.reader import ReaderRefusal, read_question


def question(count):
    return f"Tom has {count} apples. He buys 3 more apples. How many apples does he have now?"


QUESTIONS = {
    "count_700_digits": question("7" * 700),
    "count_1900_digits": question("7" * 1900),
    "count_5000_digits": question("7" * 5000),
    "count_700_grouped": question("7" + ",777" * 233),
    "count_700_leading_zeros": question("0" * 700 + "7"),
    "money_700_digits": (
        "Tom has $" + "7" * 700 + ". He spends $3. How much money does he have left?"
    ),
    "count_at_max_safe_int": question("9007199254740991"),
    "count_past_max_safe_int": question("9007199254740992"),
}


def read(text):
    frame = read_question(text)
    if type(frame) is ReaderRefusal:
        return {"reader": frame.reason.value}
    assert type(frame) is ProblemFrame
    outcome = practice_case(frame).outcome
    answered = type(outcome) is ProofGatedAnswer
    return {
        "facts": [fact.value for fact in frame.facts],
        "proposals": len(frame.proposals),
        "outcome": ["answer", outcome.value] if answered else list(outcome.reason_codes),
    }


def decode(data):
    try:
        decode_canonical(data)
    except CanonicalizationError as error:
        return [error.reason.value, error.where]
    return "decoded"


def load(data):
    loaded = load_sealed_trace(data)
    return [[f.code.value, f.stage, f.detail] for f in getattr(loaded, "failures", ())]


def outcomes():
    stored = sealed_trace_bytes(practice_case(read_question(question("7"))))
    assert stored.count(b'"value":7}') == 1

    def with_value(digits):
        return stored.replace(b'"value":7}', b'"value":' + digits + b"}")

    documents = {
        "int_700_digits": b"7" * 700,
        "negative_int_5000_digits": b"-" + b"7" * 5000,
        "int_700_digits_in_a_list": b"[" + b"7" * 700 + b"]",
        "fraction_700_digits": b"7" * 700 + b".5",
        "exponent_700_digits": b"7e" + b"7" * 700,
    }
    return {
        "reader": {name: read(text) for name, text in QUESTIONS.items()},
        "decode": {name: decode(data) for name, data in documents.items()},
        "load": {
            "fact_value_700_digits": load(with_value(b"7" * 700)),
            "fact_value_5000_digits": load(with_value(b"7" * 5000)),
        },
    }


if __name__ == "__main__":
    try:
        int("7" * 700)
        limited = False
    except ValueError:
        limited = True
    print(json.dumps({"limit": sys.get_int_max_str_digits(), "limited": limited, **outcomes()}))
'''

# A count too large for an exact fact is recorded nowhere, so the reader proposes nothing.
_OVERSIZED = {
    "facts": [3],
    "proposals": 0,
    "outcome": ["original_refusal_stands", "proposal_missing"],
}
_INT_OUT_OF_RANGE = [["undecodable", "$", "int_out_of_range at $"]]
LONG_DIGIT_OUTCOMES = {
    "reader": {
        "count_700_digits": _OVERSIZED,
        "count_1900_digits": _OVERSIZED,
        "count_5000_digits": {"reader": "too_long"},
        "count_700_grouped": _OVERSIZED,
        "count_700_leading_zeros": {"facts": [7, 3], "proposals": 1, "outcome": ["answer", 10]},
        "money_700_digits": _OVERSIZED,
        "count_at_max_safe_int": {
            "facts": [MAX_SAFE_INT, 3],
            "proposals": 1,
            "outcome": ["direct_proof_refused", "result_within_safe_range"],
        },
        "count_past_max_safe_int": _OVERSIZED,
    },
    "decode": {
        "int_700_digits": ["int_out_of_range", "$"],
        "negative_int_5000_digits": ["int_out_of_range", "$"],
        "int_700_digits_in_a_list": ["int_out_of_range", "$"],
        "fraction_700_digits": ["float_not_allowed", "$"],
        "exponent_700_digits": ["float_not_allowed", "$"],
    },
    "load": {
        "fact_value_700_digits": _INT_OUT_OF_RANGE,
        "fact_value_5000_digits": _INT_OUT_OF_RANGE,
    },
}


@pytest.mark.obligation("LOCAL-0003/int_range", "LOCAL-0005/frame_caps", "ADR-0226/9.9")
def test_long_digit_runs_read_the_same_under_the_lowest_int_string_limit():
    """docs/adr/0003 "Hashable profile" (the int bound is ±(2**53 - 1), never the
    interpreter's integer-string limit), ADR-0226 §9 (malformed input fails closed, typed),
    issue 15: in an interpreter started with -X int_max_str_digits=640, where int() of 700
    digits raises, the reader and the kernel give exactly their typed outcomes on 700- to
    5000-digit runs (a count too large for a fact is recorded nowhere, so no proposal; a
    longer question is too_long; a long literal is int_out_of_range or float_not_allowed;
    a stored trace holding one is undecodable), with no traceback, and exactly what this
    process gives under its own limit."""
    done = subprocess.run(
        [sys.executable, "-X", "int_max_str_digits=640", "-c", _LONG_DIGITS],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    child = json.loads(done.stdout)
    assert (child.pop("limit"), child.pop("limited")) == (640, True)
    assert child == LONG_DIGIT_OUTCOMES
    here: dict = {"__name__": "long_digits"}
    exec(compile(_LONG_DIGITS, "<long digits>", "exec"), here)
    assert here["outcomes"]() == LONG_DIGIT_OUTCOMES


significant_digits = st.text("0123456789", min_size=1, max_size=40)


def _grouped(digits: str) -> str:
    """``digits`` grouped by commas in threes, as the reader's count pattern accepts."""
    head = len(digits) % 3 or 3
    return ",".join([digits[:head]] + [digits[i : i + 3] for i in range(head, len(digits), 3)])


@pytest.mark.obligation("LOCAL-0003/int_range")
@given(st.integers(0, 40), significant_digits, st.booleans())
@example(0, "9007199254740991", False)
@example(0, "9007199254740992", False)
@example(0, "10000000000000000", False)
@example(30, "7", False)
@example(0, "9007199254740991", True)
@example(0, "0", False)
def test_a_count_is_judged_by_its_digits_as_int_would_judge_it(zeros, digits, grouped):
    """docs/adr/0003 "Hashable profile", issue 15: reading a count's digits without giving
    int() more than 16 of them changes no value and no outcome: it is int()'s value when that
    is at most MAX_SAFE_INT (leading zeros and comma groups included), and too large
    otherwise, as int() would show."""
    raw = "0" * zeros + digits
    if grouped:
        raw = _grouped(raw)
    value = int(raw.replace(",", ""))  # this process's limit (4300) is far above 40 digits
    read = _digits_value(raw)
    assert (read is None or read > MAX_SAFE_INT) == (value > MAX_SAFE_INT)
    if read is not None:
        assert read == value


@pytest.mark.obligation("LOCAL-0003/int_range")
def test_int_is_called_only_behind_a_length_check():
    """docs/adr/0003 "Hashable profile", issue 15: in the kernel and the reader, int() is
    called in exactly two places, each after the digits were counted: the decoder's int hook
    (at most 16 digits) and the reader's count (at most 16 significant digits)."""
    root = Path(kernel_package.__file__).parent
    sources = sorted(root.glob("*.py")) + [Path(reader_module.__file__)]
    calls = []
    for source in sources:
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "int"
                ):
                    calls.append((source.name, function.name))
    assert sorted(calls) == [("identity.py", "_bounded_int"), ("reader.py", "_digits_value")]
