"""Run the practice loop over a JSON-lines file of problems and keep every trace.

Shell code. Each line is read, checked and run on its own (docs/adr/0012): a line that cannot
be taken is a numbered skip with one reason from ``SkipReason``; a question the reader cannot
take is a refused case; a gold answer that cannot be read makes the case *unjudged*, with one
reason from ``Unjudged``, never wrong. ``wrong_ids`` holds only cases judged against a readable
integer gold answer. Nothing a line does can stop the run or leave a partial trace (a case and
its trace are stored in one transaction), and no case row is ever overwritten.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from ..kernel import (
    MAX_SAFE_INT,
    AnswerPath,
    AnswerRefusal,
    ProofGatedAnswer,
    SealedPracticeTrace,
    StageRefusal,
    practice_case,
    trust_scope,
)
from ..kernel.identity import has_lone_surrogate
from .reader import ReaderRefusal, read_question
from .store import CaseRow, StoreError, StoreProblem, TraceStore

# More digits than this can never be within ±MAX_SAFE_INT (2**53 - 1 has 16). Lengths are
# checked before any int(), so the interpreter's integer-string limit is never the bound.
_MAX_DIGITS = len(str(MAX_SAFE_INT))
_GOLD_MARKER = "####"
_GOLD_INTEGER = re.compile(r"-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)")
# A gold answer as the store keeps it: ``str()`` of a safe integer, no separators.
_STORED_GOLD = re.compile(rf"-?[0-9]{{1,{_MAX_DIGITS}}}")


class SkipReason(enum.Enum):
    """Why a line was not run as a case (each skip is reported with its line number)."""

    INVALID_UTF8 = "invalid_utf8"
    BYTE_ORDER_MARK = "byte_order_mark"
    NOT_JSON = "not_json"
    NESTING_TOO_DEEP = "nesting_too_deep"
    DUPLICATE_KEY = "duplicate_key"
    INTEGER_OUT_OF_RANGE = "integer_out_of_range"
    NOT_AN_OBJECT = "not_an_object"
    MISSING_QUESTION = "missing_question"
    QUESTION_NOT_TEXT = "question_not_text"
    QUESTION_LONE_SURROGATE = "question_lone_surrogate"
    ID_NOT_TEXT = "id_not_text"
    ID_LONE_SURROGATE = "id_lone_surrogate"
    # The same case id twice in one run: the store would hold one row for two lines.
    DUPLICATE_CASE_ID = "duplicate_case_id"
    # The case id is already stored with other content (another file, or another kernel).
    CASE_ID_CONFLICT = "case_id_conflict"
    TRACE_CONFLICT = "trace_conflict"


class Unjudged(enum.Enum):
    """Why a case's answer cannot be judged: its gold answer is absent or unreadable."""

    GOLD_ABSENT = "gold_absent"
    GOLD_NOT_TEXT = "gold_not_text"
    GOLD_NO_MARKER = "gold_no_marker"
    GOLD_NOT_AN_INTEGER = "gold_not_an_integer"
    GOLD_OUT_OF_RANGE = "gold_out_of_range"


class _LineProblem(Exception):
    def __init__(self, reason: SkipReason) -> None:
        super().__init__(reason.value)
        self.reason = reason


@dataclasses.dataclass(frozen=True, slots=True)
class SkippedLine:
    line_number: int
    reason: str
    case_id: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class GoldAnswer:
    """A case's gold answer: the integer as text, or why there is none."""

    value: str | None
    unjudged: Unjudged | None


@dataclasses.dataclass
class RunSummary:
    cases: int = 0
    answered_direct: int = 0
    answered_practice: int = 0
    refused: Counter[str] = dataclasses.field(default_factory=Counter)
    unjudged: Counter[str] = dataclasses.field(default_factory=Counter)
    wrong_ids: list[str] = dataclasses.field(default_factory=list)
    practice_ids: list[str] = dataclasses.field(default_factory=list)
    skipped: list[SkippedLine] = dataclasses.field(default_factory=list)
    # Each stored case's id and trace id (None for a case refused before any trace), in order.
    traces: list[tuple[str, str | None]] = dataclasses.field(default_factory=list)
    lines: int = 0
    interrupted: bool = False
    stopped: str | None = None

    @property
    def answered(self) -> int:
        return self.answered_direct + self.answered_practice

    def to_json(self) -> dict[str, object]:
        return {
            "cases": self.cases,
            "answered": self.answered,
            "answered_direct": self.answered_direct,
            "answered_through_practice": self.answered_practice,
            "refused": sum(self.refused.values()),
            "refused_by_reason": dict(sorted(self.refused.items())),
            "unjudged": sum(self.unjudged.values()),
            "unjudged_by_reason": dict(sorted(self.unjudged.items())),
            "wrong": len(self.wrong_ids),
            "wrong_ids": self.wrong_ids,
            "practice_ids": self.practice_ids,
            "skipped_lines": [dataclasses.asdict(line) for line in self.skipped],
            "trace_ids": {case_id: trace_id for case_id, trace_id in self.traces},
            "interrupted": self.interrupted,
            "stopped": self.stopped,
        }


def _bounded_int(text: str) -> int:
    # Length first: ``int()`` of a long literal would meet the interpreter's digit limit.
    value = int(text) if len(text.lstrip("-")) <= _MAX_DIGITS else None
    if value is None or not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        raise _LineProblem(SkipReason.INTEGER_OUT_OF_RANGE)
    return value


def _refuse_constant(text: str) -> object:
    raise _LineProblem(SkipReason.NOT_JSON)  # NaN and Infinity are not JSON


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _LineProblem(SkipReason.DUPLICATE_KEY)
    return found


def parse_line(raw: bytes) -> dict[str, object] | SkipReason | None:
    """The line's object, the reason it cannot be taken, or ``None`` for a blank line."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return SkipReason.BYTE_ORDER_MARK
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return SkipReason.INVALID_UTF8
    if not text.strip():
        return None
    try:
        value = json.loads(
            text,
            parse_int=_bounded_int,
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique_keys,
        )
    except _LineProblem as problem:
        return problem.reason
    except RecursionError:
        return SkipReason.NESTING_TOO_DEEP
    except json.JSONDecodeError:
        return SkipReason.NOT_JSON
    if type(value) is not dict:
        return SkipReason.NOT_AN_OBJECT
    if "question" not in value:
        return SkipReason.MISSING_QUESTION
    if type(value["question"]) is not str:
        return SkipReason.QUESTION_NOT_TEXT
    # SQLite keeps text as UTF-8, which has no lone surrogate: the row could not hold the
    # question exactly, and a row that is not the question cannot be verified against it.
    if has_lone_surrogate(value["question"]):
        return SkipReason.QUESTION_LONE_SURROGATE
    if "id" in value:
        given = value["id"]
        if type(given) is not str or not given:
            return SkipReason.ID_NOT_TEXT
        if has_lone_surrogate(given):
            return SkipReason.ID_LONE_SURROGATE
    return value


def gold_answer(answer: object) -> GoldAnswer:
    """The gold integer of a GSM8K ``answer`` (the text after its last ``####``, thousands
    separators allowed) or an exact JSON integer; anything else is unjudged, with its reason."""
    if answer is None:
        return GoldAnswer(None, Unjudged.GOLD_ABSENT)
    if type(answer) is int:
        return GoldAnswer(str(answer), None)  # parse_line already bounded it
    if type(answer) is not str:
        return GoldAnswer(None, Unjudged.GOLD_NOT_TEXT)
    if _GOLD_MARKER not in answer:
        return GoldAnswer(None, Unjudged.GOLD_NO_MARKER)
    text = answer.rsplit(_GOLD_MARKER, 1)[1].strip()
    if _GOLD_INTEGER.fullmatch(text) is None:
        return GoldAnswer(None, Unjudged.GOLD_NOT_AN_INTEGER)
    digits = text.replace(",", "")
    if len(digits.lstrip("-")) > _MAX_DIGITS or abs(int(digits)) > MAX_SAFE_INT:
        return GoldAnswer(None, Unjudged.GOLD_OUT_OF_RANGE)
    return GoldAnswer(str(int(digits)), None)


def classify(
    result: ReaderRefusal | SealedPracticeTrace | StageRefusal,
) -> tuple[str, str | None, int | None]:
    """The case row's outcome, reason and value for what the reader and the loop gave."""
    if type(result) is ReaderRefusal:
        return "refused", f"reader_{result.reason.value}", None
    if type(result) is StageRefusal:
        return "refused", result.reason_codes[0], None
    assert type(result) is SealedPracticeTrace
    answer = result.outcome
    if type(answer) is ProofGatedAnswer:
        return f"answered_{answer.path.value}", None, answer.value
    assert type(answer) is AnswerRefusal
    return "refused", ":".join(answer.reason_codes[:2]), None


def run_case(
    case_id: str, source: str, question: str, gold: str | None
) -> tuple[CaseRow, SealedPracticeTrace | None]:
    """Read, practise and classify one case; never raises for any question text."""
    with trust_scope():
        return _run_case(case_id, source, question, gold)


def _run_case(
    case_id: str, source: str, question: str, gold: str | None
) -> tuple[CaseRow, SealedPracticeTrace | None]:
    frame = read_question(question)
    result = frame if type(frame) is ReaderRefusal else practice_case(frame)
    outcome, reason, value = classify(result)
    trace = result if type(result) is SealedPracticeTrace else None
    row = CaseRow(case_id, source, question, gold, trace and trace.trace_id, outcome, reason, value)
    return row, trace


def is_wrong(row: CaseRow) -> bool:
    """An answered case whose value is not its gold integer; a case without a readable gold
    integer is unjudged, never wrong."""
    if not row.outcome.startswith("answered") or row.gold is None:
        return False
    return _STORED_GOLD.fullmatch(row.gold) is not None and int(row.gold) != row.value


_CONFLICTS = {
    StoreProblem.CASE_CONFLICT: SkipReason.CASE_ID_CONFLICT,
    StoreProblem.TRACE_CONFLICT: SkipReason.TRACE_CONFLICT,
}


def run_lines(
    lines: Iterable[bytes],
    *,
    source: str,
    store: TraceStore,
    progress: Callable[[RunSummary], None] | None = None,
) -> RunSummary:
    """Run every line. Ctrl-C stops the run with ``interrupted`` set and a store error with
    ``stopped`` set; either way every case that completed is committed and counted."""
    summary = RunSummary()
    try:
        with store.batch():
            _run_lines(lines, source, store, progress, summary)
    except KeyboardInterrupt:
        summary.interrupted = True
    except StoreError as error:
        summary.stopped = str(error)
    return summary


def _run_lines(
    lines: Iterable[bytes],
    source: str,
    store: TraceStore,
    progress: Callable[[RunSummary], None] | None,
    summary: RunSummary,
) -> None:
    seen: set[str] = set()
    for line_number, raw in enumerate(lines, start=1):
        summary.lines = line_number
        record = parse_line(raw)
        if record is None:
            continue
        if type(record) is SkipReason:
            summary.skipped.append(SkippedLine(line_number, record.value))
            continue
        case_id = record.get("id", f"{source}:{line_number}")
        assert type(case_id) is str
        if case_id in seen:
            summary.skipped.append(
                SkippedLine(line_number, SkipReason.DUPLICATE_CASE_ID.value, case_id)
            )
            continue
        seen.add(case_id)
        question = record["question"]
        assert type(question) is str
        gold = gold_answer(record.get("answer"))
        try:
            with trust_scope():  # one call: the trace is validated once, and stored
                row, trace = run_case(case_id, source, question, gold.value)
                store.put_case(row, trace)
        except StoreError as error:
            if error.problem not in _CONFLICTS:
                raise
            reason = _CONFLICTS[error.problem].value
            summary.skipped.append(SkippedLine(line_number, reason, case_id))
            continue
        _count(summary, row, gold)
        if progress is not None:
            progress(summary)


def _count(summary: RunSummary, row: CaseRow, gold: GoldAnswer) -> None:
    summary.cases += 1
    summary.traces.append((row.case_id, row.trace_id))
    if gold.unjudged is not None:
        summary.unjudged[gold.unjudged.value] += 1
    if row.outcome == "refused":
        summary.refused[row.reason or "refused"] += 1
        return
    if row.outcome == f"answered_{AnswerPath.DIRECT.value}":
        summary.answered_direct += 1
    else:
        summary.answered_practice += 1
        summary.practice_ids.append(row.case_id)
    if is_wrong(row):
        summary.wrong_ids.append(row.case_id)


def count_lines(path: Path) -> int:
    """The number of lines ``run_file`` will read (for a progress total)."""
    count = 0
    last = b"\n"
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")


def run_file(
    path: Path, store: TraceStore, progress: Callable[[RunSummary], None] | None = None
) -> RunSummary:
    with path.open("rb") as handle:
        return run_lines(handle, source=path.name, store=store, progress=progress)
