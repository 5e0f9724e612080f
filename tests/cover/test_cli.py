"""The ``practice-loop`` command line: run, verify and show over a store (issue 3, shell)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from importlib import resources

import pytest

from practice_loop.cli import main

MALFORMED = resources.files("practice_loop") / "data" / "sample_malformed.jsonl"


def _run_json(capsys, *args: str) -> tuple[int, dict]:
    status = main(["run", *args, "--json", "--quiet"])
    return status, json.loads(capsys.readouterr().out)


def _trace_ids(store) -> list[str]:
    with sqlite3.connect(store) as db:
        return [row[0] for row in db.execute("SELECT trace_id FROM traces")]


@pytest.mark.obligation("ADR-0226/13.8", "ADR-0228/17.smoke_lane", "ADR-0231/18.25")
def test_the_main_job_runs_the_sample_and_verifies_it(tmp_path, capsys):
    """Issue 3: the sample answers directly and through practice, with no wrong answer."""
    store = tmp_path / "store.sqlite"
    status, summary = _run_json(capsys, "--store", str(store))
    assert status == 0
    assert summary["wrong_ids"] == [] and summary["wrong"] == 0
    assert summary["answered_direct"] > 0 and summary["answered_through_practice"] > 0
    assert summary["cases"] == summary["answered"] + summary["refused"]
    assert summary["refused_by_reason"]
    assert main(["verify", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"verified {len(_trace_ids(store))} traces" in out and "0 failed" in out


@pytest.mark.obligation("ADR-0226/9.7")
def test_running_twice_stores_each_trace_once(tmp_path, capsys):
    """Traces are content-addressed: the same case gives the same trace id, stored once."""
    store = tmp_path / "store.sqlite"
    _run_json(capsys, "--store", str(store))
    first = sorted(_trace_ids(store))
    _run_json(capsys, "--store", str(store))
    assert sorted(_trace_ids(store)) == first


@pytest.mark.obligation("ADR-0226/9.9")
def test_malformed_lines_are_reported_and_skipped(tmp_path, capsys):
    """Issue 3 'Bad input': each bad line is named by its number; the run goes on and no
    partial trace is written."""
    source = tmp_path / "malformed.jsonl"
    source.write_bytes(MALFORMED.read_bytes() + b"\xff\xfe not utf-8\n")
    store = tmp_path / "store.sqlite"
    status = main(["run", str(source), "--store", str(store), "--json", "--quiet"])
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert status == 0
    reasons = {line["reason"] for line in summary["skipped_lines"]}
    assert {"not_json", "missing_question", "question_not_text", "invalid_utf8"} <= reasons
    for line in summary["skipped_lines"]:
        assert f"line {line['line_number']} skipped: {line['reason']}" in captured.err
    with sqlite3.connect(store) as db:
        with_trace = db.execute("SELECT count(*) FROM cases WHERE trace_id IS NOT NULL").fetchone()
        traces = db.execute("SELECT count(*) FROM traces").fetchone()
    assert traces[0] <= with_trace[0]
    assert main(["verify", "--store", str(store)]) == 0


@pytest.mark.obligation("ADR-0226/8.11")
def test_show_prints_a_stored_trace(tmp_path, capsys):
    store = tmp_path / "store.sqlite"
    _run_json(capsys, "--store", str(store))
    with sqlite3.connect(store) as db:
        (trace_id,) = db.execute(
            "SELECT trace_id FROM cases WHERE outcome = 'answered_practice' LIMIT 1"
        ).fetchone()
    assert main(["show", trace_id, "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"trace {trace_id} (seal verified)")
    assert "contract_and_proof_closed" in out and "(practice)" in out


@pytest.mark.obligation("ADR-0226/8.11", "ADR-0226/9.16")
def test_tampered_store_fails_verification_and_is_not_shown(tmp_path, capsys):
    """Issue 3: a tampered stored trace fails with a typed reason and is never served."""
    store = tmp_path / "store.sqlite"
    _run_json(capsys, "--store", str(store))
    trace_id = _trace_ids(store)[0]
    with sqlite3.connect(store) as db:
        (body,) = db.execute("SELECT body FROM traces WHERE trace_id = ?", (trace_id,)).fetchone()
        forged = bytes(body).replace(b'"value":', b'"value": ', 1)
        db.execute("UPDATE traces SET body = ? WHERE trace_id = ?", (forged, trace_id))
    assert main(["verify", "--store", str(store)]) == 1
    assert f"{trace_id}: undecodable" in capsys.readouterr().out
    assert main(["show", trace_id, "--store", str(store)]) == 1
    assert "(seal verified)" not in capsys.readouterr().out


@pytest.mark.parametrize("args", [["run", "no/such/file.jsonl"], ["show", "0" * 64]])
def test_usage_errors(tmp_path, capsys, args):
    status = main([*args, "--store", str(tmp_path / "store.sqlite")])
    assert status in (1, 2)
    if args[0] == "run":
        assert status == 2 and "no such file" in capsys.readouterr().err


def test_a_file_that_is_not_a_store_is_a_usage_error(tmp_path, capsys):
    bogus = tmp_path / "bogus.sqlite"
    bogus.write_bytes(b"this is not sqlite" * 100)
    assert main(["verify", "--store", str(bogus)]) == 2
    assert "not a practice-loop store" in capsys.readouterr().err


def test_module_entry_point(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "practice_loop",
            "run",
            "--store",
            str(tmp_path / "s.sqlite"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "wrong_ids: []" in result.stdout


def test_a_command_imports_only_its_own_module():
    """``run`` loads none of the other commands' modules (issue 3: start-up counts in a
    run's throughput); a command of its own module loads that module; help lists them all."""
    script = (
        "import sys\n"
        "from practice_loop.cli import EXTENSION_COMMANDS, build_parser\n"
        "modules = {f'practice_loop.{module}' for module, _ in EXTENSION_COMMANDS.values()}\n"
        "build_parser('run')\n"
        "print(sorted(modules & set(sys.modules)))\n"
        "build_parser('prove-policy')\n"
        "print(sorted(modules & set(sys.modules)))\n"
        "print(build_parser().format_help())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    after_run, after_prove, help_text = result.stdout.split("\n", 2)
    assert after_run == "[]"
    assert after_prove == "['practice_loop.prove_policy']"
    for command in ["run", "verify", "show", "vectors", "gate", "workbench", "fuzz",
                    "contracts", "policy-diff", "prove-policy", "compile-kinds"]:
        assert command in help_text
