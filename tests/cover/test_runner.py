"""Lines are data, never a crash (docs/adr/0012, issue 15): every line that cannot be taken is a
numbered skip with its exact ``SkipReason``; every unreadable gold answer an unjudged case with
its exact ``Unjudged`` reason; ``wrong_ids`` holds only cases judged against a readable integer;
and a run's counts always equal the rows it stored."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from practice_loop.kernel import MAX_SAFE_INT
from practice_loop.product.runner import (
    SkipReason,
    Unjudged,
    gold_answer,
    parse_line,
    run_lines,
)
from practice_loop.product.store import ReadOnlyTraceStore, TraceStore

QUESTION = "Tom has 3 apples. He buys 2 more apples. How many apples does Tom have now?"


def _line(**fields: object) -> bytes:
    return json.dumps({"question": QUESTION, **fields}).encode()


LINES = [
    ("invalid_utf8", b'{"question": "caf\xe9"}', SkipReason.INVALID_UTF8),
    ("bom", b"\xef\xbb\xbf" + _line(), SkipReason.BYTE_ORDER_MARK),
    ("not_json", b'{"question": "x"', SkipReason.NOT_JSON),
    ("nan", b'{"question": "x", "n": NaN}', SkipReason.NOT_JSON),
    ("deep", b"[" * 100_000 + b"]" * 100_000, SkipReason.NESTING_TOO_DEEP),
    (
        "duplicate_answer",
        b'{"question": "x", "answer": "#### 1", "answer": "#### 2"}',
        SkipReason.DUPLICATE_KEY,
    ),
    ("huge_int", b'{"question": "x", "n": ' + b"1" * 5000 + b"}", SkipReason.INTEGER_OUT_OF_RANGE),
    ("past_safe", b'{"question": "x", "n": 9007199254740992}', SkipReason.INTEGER_OUT_OF_RANGE),
    ("array", b'["question"]', SkipReason.NOT_AN_OBJECT),
    ("no_question", b'{"answer": "#### 1"}', SkipReason.MISSING_QUESTION),
    ("question_number", b'{"question": 42}', SkipReason.QUESTION_NOT_TEXT),
    ("question_surrogate", b'{"question": "x\\ud800"}', SkipReason.QUESTION_LONE_SURROGATE),
    ("id_number", b'{"question": "x", "id": 7}', SkipReason.ID_NOT_TEXT),
    ("id_empty", b'{"question": "x", "id": ""}', SkipReason.ID_NOT_TEXT),
    ("id_surrogate", b'{"question": "x", "id": "x\\ud800"}', SkipReason.ID_LONE_SURROGATE),
]


@pytest.mark.obligation("LOCAL-0012/lines_as_data")
@pytest.mark.parametrize("raw, reason", [case[1:] for case in LINES], ids=[c[0] for c in LINES])
def test_every_line_that_cannot_be_taken_has_its_exact_reason(raw, reason):
    """docs/adr/0012: one ``SkipReason`` a line, never an exception."""
    assert parse_line(raw) is reason


def test_an_escaped_backslash_is_an_ordinary_id():
    """Issue 15 (6): ``"x\\\\ud800"`` is the six characters x, backslash, u, d, 8, 0, 0."""
    parsed = parse_line(b'{"question": "x", "id": "x\\\\ud800", "n": 9007199254740991}')
    assert type(parsed) is dict and parsed["id"] == "x\\ud800"
    assert parse_line(b"  \t ") is None  # a blank line is no case and no skip


GOLDS = [
    (None, None, Unjudged.GOLD_ABSENT),
    ("#### 11", "11", None),
    ("so 9 + 2 = 11.\n#### 11", "11", None),
    ("#### 1,234,567", "1234567", None),
    ("#### -5", "-5", None),
    ("#### 12 #### 13", "13", None),  # the text after the last marker
    (11, "11", None),  # an exact JSON integer
    ("#### eleven", None, Unjudged.GOLD_NOT_AN_INTEGER),
    ("#### 11.0", None, Unjudged.GOLD_NOT_AN_INTEGER),
    ("#### 11 apples", None, Unjudged.GOLD_NOT_AN_INTEGER),
    ("#### 1,0,0", None, Unjudged.GOLD_NOT_AN_INTEGER),
    ("####", None, Unjudged.GOLD_NOT_AN_INTEGER),
    ("#### " + "1" * 5001, None, Unjudged.GOLD_OUT_OF_RANGE),
    ("#### 9007199254740992", None, Unjudged.GOLD_OUT_OF_RANGE),
    ("11", None, Unjudged.GOLD_NO_MARKER),
    (11.0, None, Unjudged.GOLD_NOT_TEXT),
    (True, None, Unjudged.GOLD_NOT_TEXT),
    (["#### 11"], None, Unjudged.GOLD_NOT_TEXT),
]


@pytest.mark.obligation("LOCAL-0012/lines_as_data")
@pytest.mark.parametrize("answer, value, unjudged", GOLDS)
def test_gold_answers_are_read_exactly_or_unjudged_with_a_reason(answer, value, unjudged):
    """docs/adr/0012: a gold integer or the exact reason the case cannot be judged."""
    gold = gold_answer(answer)
    assert (gold.value, gold.unjudged) == (value, unjudged)


@given(st.integers(-MAX_SAFE_INT, MAX_SAFE_INT))
def test_every_safe_integer_is_a_gold_answer(value):
    """docs/adr/0012: the bound is the canonical profile's, both as text and as JSON."""
    assert gold_answer(f"#### {value:,}").value == str(value)
    assert gold_answer(value).value == str(value)


@pytest.mark.obligation("LOCAL-0012/lines_as_data", "LOCAL-0012/no_overwrite")
def test_a_run_counts_exactly_what_it_stored(tmp_path):
    """Issue 15 (5, 6, 7): bad lines are skipped and the run goes on; an unreadable gold is
    unjudged, never wrong; a repeated id is skipped; the counts equal the stored rows."""
    lines = [
        _line(id="ok", answer="#### 5"),
        b'{"question": "x", "answer": "#### ' + b"1" * 5001 + b'"}',
        b'{"question": "x", "n": ' + b"1" * 5000 + b"}",
        _line(id="eleven", answer="#### eleven"),
        _line(id="wrong", answer="#### 6"),
        b'{"id": "x\\ud800", "question": "x"}',
        b'{"id": "x\\\\ud800", "question": "x"}',
        _line(id="ok", answer="#### 5"),
        _line(answer=11.0),
    ]
    with TraceStore(tmp_path / "s.sqlite") as store:
        summary = run_lines(lines, source="t.jsonl", store=store)
    assert [(s.line_number, s.reason) for s in summary.skipped] == [
        (3, "integer_out_of_range"),
        (6, "id_lone_surrogate"),
        (8, "duplicate_case_id"),
    ]
    assert summary.wrong_ids == ["wrong"]
    assert summary.unjudged == {
        "gold_out_of_range": 1,
        "gold_not_an_integer": 1,
        "gold_not_text": 1,
        "gold_absent": 1,
    }
    with ReadOnlyTraceStore(tmp_path / "s.sqlite") as store:
        stored = sorted(row.case_id for row in store.cases())
    assert summary.cases == len(stored) == 6
    assert stored == sorted(case_id for case_id, _ in summary.traces)


@pytest.mark.obligation("LOCAL-0012/no_overwrite")
def test_two_files_of_one_name_never_share_a_row(tmp_path):
    """Issue 15 (6): the second file's lines are refused as conflicts, the first's rows stay."""
    with TraceStore(tmp_path / "s.sqlite") as store:
        first = run_lines([_line(answer="#### 5")], source="train.jsonl", store=store)
        other = json.dumps(
            {"question": "Ann has 9 pens. She loses 4 pens. How many pens does Ann have now?"}
        ).encode()
        second = run_lines([other], source="train.jsonl", store=store)
        again = run_lines([_line(answer="#### 5")], source="train.jsonl", store=store)
    assert first.cases == 1 and again.cases == 1 and not again.skipped
    assert second.cases == 0
    assert [(s.line_number, s.reason) for s in second.skipped] == [(1, "case_id_conflict")]
    with ReadOnlyTraceStore(tmp_path / "s.sqlite") as store:
        assert [row.question for row in store.cases()] == [QUESTION]


def test_lines_do_not_depend_on_the_interpreters_digit_limit(tmp_path):
    """docs/adr/0012: under ``-X int_max_str_digits=640`` a 700- or 5001-digit number is the
    same typed skip or unjudged case, never ``ValueError``."""
    program = f"""
import json
from practice_loop.product.runner import gold_answer, parse_line
print(json.dumps([
    parse_line(b'{{"question": "x", "n": ' + b"7" * 700 + b'}}').value,
    gold_answer("#### " + "7" * 5001).unjudged.value,
    gold_answer("#### " + "7" * 700).unjudged.value,
    parse_line(b'{{"question": {json.dumps(QUESTION)}}}')["question"] == {QUESTION!r},
]))
"""
    result = subprocess.run(
        [sys.executable, "-X", "int_max_str_digits=640", "-c", program],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        "integer_out_of_range",
        "gold_out_of_range",
        "gold_out_of_range",
        True,
    ]
