"""Run the practice loop over a JSON-lines file of problems and keep every trace.

Shell code. Each line is read, checked and run on its own: a line that is not UTF-8, not
JSON, not an object, or has no string ``question`` is reported with its line number and
skipped; a question the reader cannot take is a refused case; nothing a line does can stop
the run or leave a partial trace (a case and its trace are stored in one transaction).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

from .kernel import (
    AnswerPath,
    AnswerRefusal,
    ProofGatedAnswer,
    SealedPracticeTrace,
    StageRefusal,
    practice_case,
)
from .reader import ReaderRefusal, read_question
from .store import CaseRow, TraceStore

_GOLD = re.compile(r"####\s*(.+?)\s*$")
_INTEGER = re.compile(r"-?\d+")


@dataclasses.dataclass(frozen=True, slots=True)
class SkippedLine:
    line_number: int
    reason: str


@dataclasses.dataclass
class RunSummary:
    cases: int = 0
    answered_direct: int = 0
    answered_practice: int = 0
    refused: Counter[str] = dataclasses.field(default_factory=Counter)
    wrong_ids: list[str] = dataclasses.field(default_factory=list)
    practice_ids: list[str] = dataclasses.field(default_factory=list)
    skipped: list[SkippedLine] = dataclasses.field(default_factory=list)

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
            "wrong": len(self.wrong_ids),
            "wrong_ids": self.wrong_ids,
            "practice_ids": self.practice_ids,
            "skipped_lines": [dataclasses.asdict(line) for line in self.skipped],
        }


def gold_number(answer: object) -> str | None:
    """The text after ``####`` with thousands separators removed, or ``None``."""
    if type(answer) is not str:
        return None
    match = _GOLD.search(answer.strip())
    return match.group(1).replace(",", "") if match else None


def _storable(text: str) -> str:
    # A lone surrogate cannot be stored as UTF-8; keep it visible as an escape instead.
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _parse_line(raw: bytes) -> tuple[dict[str, object] | None, str | None]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "invalid_utf8"
    if not text.strip():
        return None, "blank_line"
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return None, "not_json"
    if type(value) is not dict:
        return None, "not_an_object"
    if "question" not in value:
        return None, "missing_question"
    if type(value["question"]) is not str:
        return None, "question_not_text"
    return value, None


def run_case(
    case_id: str, source: str, record: dict[str, object]
) -> tuple[CaseRow, SealedPracticeTrace | None]:
    """Read, practise and classify one case; never raises for any question text."""
    question = record["question"]
    assert type(question) is str
    gold = gold_number(record.get("answer"))
    frame = read_question(question)
    trace = None
    value = None
    if type(frame) is ReaderRefusal:
        outcome, reason = "refused", f"reader_{frame.reason.value}"
    else:
        result = practice_case(frame)
        if type(result) is StageRefusal:
            outcome, reason = "refused", result.reason_codes[0]
        else:
            trace = result
            answer = trace.outcome
            if type(answer) is ProofGatedAnswer:
                outcome = f"answered_{answer.path.value}"
                reason, value = None, answer.value
            else:
                assert type(answer) is AnswerRefusal
                outcome, reason = "refused", ":".join(answer.reason_codes[:2])
    row = CaseRow(
        case_id, source, _storable(question), gold, trace and trace.trace_id, outcome, reason, value
    )
    return row, trace


def run_lines(
    lines: Iterable[bytes],
    *,
    source: str,
    store: TraceStore,
    progress: Callable[[RunSummary], None] | None = None,
) -> RunSummary:
    summary = RunSummary()
    with store.batch():
        _run_lines(lines, source, store, progress, summary)
    return summary


def _run_lines(
    lines: Iterable[bytes],
    source: str,
    store: TraceStore,
    progress: Callable[[RunSummary], None] | None,
    summary: RunSummary,
) -> None:
    for line_number, raw in enumerate(lines, start=1):
        record, problem = _parse_line(raw)
        if record is None:
            if problem != "blank_line":
                summary.skipped.append(SkippedLine(line_number, problem))  # type: ignore[arg-type]
            continue
        given_id = record.get("id")
        case_id = given_id if type(given_id) is str and given_id else f"{source}:{line_number}"
        row, trace = run_case(_storable(case_id), source, record)
        store.put_case(row, trace)
        _count(summary, row)
        if progress is not None:
            progress(summary)


def is_wrong(row: CaseRow) -> bool:
    """An answered case whose value is not its gold number. A case without a gold number
    cannot be judged; a non-integer gold number can never equal an answer."""
    if not row.outcome.startswith("answered") or row.gold is None:
        return False
    return _INTEGER.fullmatch(row.gold) is None or int(row.gold) != row.value


def _count(summary: RunSummary, row: CaseRow) -> None:
    summary.cases += 1
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


def run_file(
    path: Path, store: TraceStore, progress: Callable[[RunSummary], None] | None = None
) -> RunSummary:
    with path.open("rb") as handle:
        return run_lines(handle, source=path.name, store=store, progress=progress)
