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
