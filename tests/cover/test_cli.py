"""The ``practice-loop`` command line: the main job prints every stage's record as JSON."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from practice_loop.cli import main
from practice_loop.examples import shipped_examples
from practice_loop.kernel import SourceSpan


def _lines(capsys, *args: str) -> list[dict]:
    assert main(["demo", *args]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_demo_prints_every_stage_of_every_example(capsys):
    """Issue 2: the main job runs the stages built so far and prints each record as JSON."""
    lines = _lines(capsys)
    stages = {(line["example"], line["stage"]) for line in lines}
    assert {example.name for example in shipped_examples()} == {name for name, _ in stages}
    assert ("direction_unbound", "search_run") in stages
    assert ("runnable_increase", "proof") in stages
    by_stage = {(line["example"], line["stage"]): line["record"] for line in lines}
    assert by_stage[("direction_unbound", "gate")]["reason_code"] == "eligible_missing_role"
    assert by_stage[("direction_unbound", "budget")]["status"] == "BUDGET_ALLOWED"
    run = by_stage[("direction_unbound", "search_run")]
    assert (run["run_disposition"], run["exhaustion_code"]) == (
        "exhausted_no_candidate",
        "operator_set_empty",
    )
    assert by_stage[("runnable_increase", "proof")]["derived_value"] == 11
    assert by_stage[("proof_refused", "proof")]["status"] == "refused"
    assert by_stage[("two_residuals", "search_run")]["run_disposition"] == "blocked_by_gate"


def test_demo_output_is_deterministic(capsys):
    """ADR-0226 §9: the same frames give the same bytes on every run."""
    assert _lines(capsys) == _lines(capsys)


def test_demo_can_select_one_example(capsys):
    lines = _lines(capsys, "--example", "proof_refused")
    assert {line["example"] for line in lines} == {"proof_refused"}


def test_unknown_example_is_a_usage_error(capsys):
    """Bad input gets a clear message and a non-zero status."""
    assert main(["demo", "--example", "no_such_example"]) == 2
    assert "unknown example" in capsys.readouterr().err


def test_no_command_is_a_usage_error():
    with pytest.raises(SystemExit) as raised:
        main([])
    assert raised.value.code == 2


def test_console_script_entry_point_runs():
    """The installed ``practice-loop`` module entry point works end to end."""
    result = subprocess.run(
        [sys.executable, "-m", "practice_loop", "demo", "--example", "runnable_increase"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert '"stage": "proof"' in result.stdout


@pytest.mark.parametrize("example", shipped_examples(), ids=lambda e: e.name)
def test_shipped_examples_have_exact_spans(example):
    """Every span of a shipped frame is the source text at its offsets."""
    for span in example.frame.all_spans():
        assert isinstance(span, SourceSpan)
        assert example.frame.source_text[span.start : span.end] == span.text
