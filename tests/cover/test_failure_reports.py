"""A failing test names the clause it proves (issue 4: planting a violation must make the suite
fail with a message that names the violated clause). tests/conftest.py adds the clauses cited
by the test's docstring (or its class's, or its module's) to the failure report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run_probe(tmp_path: Path, source: str) -> str:
    probe = ROOT / "tests" / "cover" / f"test_zz_probe_{tmp_path.name}.py"
    probe.write_text(source)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(probe)],
            capture_output=True, text=True, cwd=ROOT, check=False,
        )  # fmt: skip
    finally:
        probe.unlink()
    assert result.returncode == 1, result.stdout + result.stderr
    return result.stdout


def test_a_failure_names_the_clause_of_its_docstring(tmp_path):
    out = _run_probe(
        tmp_path,
        'def test_probe():\n    """ADR-0228 §9 check 4: charges fit."""\n    assert 4 == 5\n',
    )
    assert "violated clause" in out and "ADR-0228 §9 check 4" in out


def test_a_failure_without_a_cited_clause_adds_nothing(tmp_path):
    out = _run_probe(tmp_path, "def test_probe():\n    assert 4 == 5\n")
    assert "violated clause" not in out
