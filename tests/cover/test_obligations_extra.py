"""Obligations of the registry that no other test proved yet (docs/obligations.toml)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

KERNEL = Path(__file__).resolve().parents[2] / "src" / "practice_loop" / "kernel"
# Every stage that judges, gates, budgets, opens a run, proposes, replays or answers.
PRODUCERS = {
    "assess",
    "check_proof",
    "decide_search_gate",
    "decide_compute_budget",
    "open_search_run",
    "record_attempts",
    "propose_candidate",
    "replay_candidate",
    "decide_answer",
    "practice_case",
    "seal_practice_trace",
}


@pytest.mark.obligation("LOCAL-0001/no_authority")
def test_the_projection_takes_only_record_types_and_calls_no_stage() -> None:
    """docs/adr/0001 "No authority": residual.py imports the assessment's record types and the
    frame's values, never a function of theirs, and names no stage that judges or decides."""
    tree = ast.parse((KERNEL / "residual.py").read_text(encoding="utf-8"))
    upstream = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            upstream.setdefault(node.module, set()).update(alias.name for alias in node.names)
    # The record vocabulary (identity, trust, checks, record, span, refusal): values, checks.
    vocabulary = {"identity", "trust", "checks", "record", "span", "refusal"}
    assert set(upstream) <= {"assessment", "frame"} | vocabulary, upstream
    for module in ("assessment", "frame"):
        values = importlib.import_module(f"practice_loop.kernel.{module}")
        for name in upstream.get(module, ()):
            value = getattr(values, name)
            assert isinstance(value, type) or not callable(value), (module, name)
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    named |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not named & PRODUCERS, named & PRODUCERS


def test_the_gate_outside_a_checkout_says_it_needs_one(tmp_path, capsys, monkeypatch):
    """Issue 18: an installed package has no docs/obligations.toml; run where there is none,
    the gate says what it reads and where (exit 2), without running the suite."""
    from practice_loop.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    assert cli_main(["gate", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "docs/obligations.toml: no such file" in err and "checkout" in err
    assert not (tmp_path / "out").exists()
