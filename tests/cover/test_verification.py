"""Every stored byte verified, not just every identity (docs/adr/0012, issue 15 (4)).

Each damage below is made to a store the main job wrote, the way a forger or a careless tool
would make it (SQL on the file, no resealing), and must give exactly its finding, at its stage;
``verify``, ``show`` and Workbench must agree on what is verified.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from practice_loop.cli import main
from practice_loop.kernel import SealedPracticeTrace
from practice_loop.product.store import ReadOnlyTraceStore
from practice_loop.product.verification import check_trace, verify_store
from practice_loop.workbench import Outcome, StandingCache

PRACTICE_CASE = "s11"  # answered through practice: "answered through practice: 7 apple"
DIRECT_CASE = "s01"
REFUSED_CASE = "s18"


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "store.sqlite"
    assert main(["run", "--store", str(path), "--quiet", "--json"]) == 0
    return path


def _damaged(sample_store: Path, tmp_path: Path, *statements: str) -> Path:
    path = tmp_path / "damaged.sqlite"
    shutil.copyfile(sample_store, path)
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        for statement in statements:
            db.execute(statement)
    return path


def _trace_of(path: Path, case_id: str) -> str:
    with contextlib.closing(sqlite3.connect(path)) as db:
        (trace_id,) = db.execute(
            "SELECT trace_id FROM cases WHERE case_id = ?", (case_id,)
        ).fetchone()
    return trace_id


def _replace_in_body(case_id: str, old: str, new: str) -> str:
    return (
        f"UPDATE traces SET body = CAST(replace(CAST(body AS TEXT), '{old}', '{new}') AS BLOB) "
        f"WHERE trace_id = (SELECT trace_id FROM cases WHERE case_id = '{case_id}')"
    )


def _findings(path: Path) -> list[tuple[str, str, str]]:
    with ReadOnlyTraceStore(path) as store:
        result = verify_store(store)
    return [(finding.subject, finding.code, finding.stage) for finding in result.findings]


@pytest.mark.obligation("LOCAL-0012/every_byte")
def test_the_main_jobs_store_verifies_in_full(sample_store):
    """docs/adr/0012: every case re-runs to its row and its trace's bytes exactly."""
    with ReadOnlyTraceStore(sample_store) as store:
        result = verify_store(store)
    assert result.valid and result.cases == 43 and result.traces == 43
    assert result.findings == [] and result.failed_cases == 0 and result.orphaned == 0


PROSE = [
    # (case, old text in the stored bytes, new text, stage the replay names)
    (PRACTICE_CASE, "answered through practice: 7", "closed: 5 + 2 = 7", "outcome"),
    (DIRECT_CASE, '"explanation":"answered directly: ', '"explanation":"guessed: ', "outcome"),
    (REFUSED_CASE, "no answer: ", "answered: ", "outcome"),
]


@pytest.mark.obligation("LOCAL-0012/every_byte", "LOCAL-0012/one_meaning")
@pytest.mark.parametrize("case_id, old, new, stage", PROSE, ids=[p[0] for p in PROSE])
def test_edited_prose_fails_with_the_stage_it_was_edited_in(
    sample_store, tmp_path, case_id, old, new, stage
):
    """Issue 15 (4): an explanation is outside every identity, so only the byte-for-byte
    re-run catches an edit; it is ``explanation_diverged`` at the stage, and ``show`` and
    Workbench no longer call the trace verified."""
    path = _damaged(sample_store, tmp_path, _replace_in_body(case_id, old, new))
    trace_id = _trace_of(path, case_id)
    assert (f"trace {trace_id}", "explanation_diverged", stage) in _findings(path)
    with ReadOnlyTraceStore(path) as store:
        shown = check_trace(store, trace_id)
        (row,) = [row for row in store.cases() if row.case_id == case_id]
        standing = StandingCache().standing(store, row)
    assert type(shown) is not SealedPracticeTrace
    assert [finding.code for finding in shown] == ["explanation_diverged"]
    assert standing.outcome is Outcome.FAILED_VERIFICATION
    assert main(["show", case_id, "--store", str(path)]) == 1


ROW_DAMAGE = [
    (
        "refused_made_answered",
        f"UPDATE cases SET outcome = 'answered_direct', reason = NULL, value = 99 "
        f"WHERE case_id = '{REFUSED_CASE}'",
        REFUSED_CASE,
        "row_diverged",
    ),
    (
        "value_changed",
        f"UPDATE cases SET value = 8 WHERE case_id = '{PRACTICE_CASE}'",
        PRACTICE_CASE,
        "row_diverged",
    ),
    (
        "question_edited",
        f"UPDATE cases SET question = replace(question, '7', '9') WHERE case_id = '{DIRECT_CASE}'",
        DIRECT_CASE,
        "question_diverged",
    ),
    (
        "gold_is_not_judged_here",  # gold is input, not derived: editing it is not a failure
        f"UPDATE cases SET gold = '12345' WHERE case_id = '{DIRECT_CASE}'",
        DIRECT_CASE,
        None,
    ),
    (
        "value_of_wrong_type",
        f"UPDATE cases SET value = x'07' WHERE case_id = '{PRACTICE_CASE}'",
        PRACTICE_CASE,
        "row_malformed",
    ),
]


@pytest.mark.obligation("LOCAL-0012/every_byte")
@pytest.mark.parametrize(
    "statement, case_id, code", [d[1:] for d in ROW_DAMAGE], ids=[d[0] for d in ROW_DAMAGE]
)
def test_each_case_row_is_checked_against_its_trace(
    sample_store, tmp_path, statement, case_id, code
):
    """Issue 15 (4): a ``cases`` row turned from refused into ``answered_direct 99`` (or any
    other edit of what the trace decides) is a finding of that case, and only of it."""
    path = _damaged(sample_store, tmp_path, statement)
    expected = [] if code is None else [(f"case {case_id}", code, "case")]
    assert _findings(path) == expected


TRACE_DAMAGE = [
    (
        "trace_deleted",
        f"DELETE FROM traces WHERE trace_id = (SELECT trace_id FROM cases WHERE case_id = "
        f"'{DIRECT_CASE}')",
        f"case {DIRECT_CASE}",
        "trace_missing",
        "case",
    ),
    (
        "case_deleted",
        f"DELETE FROM cases WHERE case_id = '{DIRECT_CASE}'",
        "trace",
        "trace_orphaned",
        "store",
    ),
    (
        "body_as_text",
        f"UPDATE traces SET body = CAST(body AS TEXT) WHERE trace_id = (SELECT trace_id FROM "
        f"cases WHERE case_id = '{DIRECT_CASE}')",
        "trace",
        "body_unreadable",
        "store",
    ),
    (
        "value_in_trace",
        _replace_in_body(PRACTICE_CASE, '"value":7', '"value":8'),
        "trace",
        "record_malformed",
        "ProofGatedAnswer",
    ),
    (
        "not_canonical",
        _replace_in_body(PRACTICE_CASE, '"value":7', '"value": 7'),
        "trace",
        "undecodable",
        "$",
    ),
]


@pytest.mark.obligation("LOCAL-0012/every_byte")
@pytest.mark.parametrize(
    "statement, subject, code, stage",
    [d[1:] for d in TRACE_DAMAGE],
    ids=[d[0] for d in TRACE_DAMAGE],
)
def test_each_damaged_trace_is_named_and_verification_goes_on(
    sample_store, tmp_path, statement, subject, code, stage
):
    """Issue 15 (3, 4, 14): one typed finding for the damaged trace; every other case still
    verifies (the findings name nothing else)."""
    path = _damaged(sample_store, tmp_path, statement)
    found = _findings(path)
    assert [(c, s) for _, c, s in found] == [(code, stage)]
    assert found[0][0].startswith(subject)
    with ReadOnlyTraceStore(path) as store:
        result = verify_store(store)
    assert result.cases + (code == "trace_orphaned") == 43
