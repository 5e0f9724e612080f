"""An obligation mark counts only on a test: pytest ignores marks on any other function, so a
helper decorated by mistake silently takes an obligation's coverage away from the test that
was meant to carry it (docs/obligations.toml; this happened once, in test_operators.py)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _misplaced_marks() -> list[str]:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.name.startswith("test"):
                continue
            if any("mark.obligation" in ast.unparse(mark) for mark in node.decorator_list):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} {node.name}")
    return found


def test_every_obligation_mark_decorates_a_test():
    assert _misplaced_marks() == []
