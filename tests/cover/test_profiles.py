"""The Hypothesis profiles of tests/conftest.py (issue 4): ``ci`` is ours, reproducible, and is
what runs when ``CI`` is set; ``nightly`` is random with a persistent database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

ROOT = Path(__file__).resolve().parents[2]


def test_ci_profile_is_reproducible_and_keeps_no_database():
    ci = settings.get_profile("ci")
    assert ci.derandomize is True and ci.database is None and ci.max_examples == 150


def test_nightly_profile_is_random_with_a_persistent_database():
    nightly = settings.get_profile("nightly")
    assert nightly.derandomize is False and nightly.max_examples >= 1000
    assert type(nightly.database) is DirectoryBasedExampleDatabase


@pytest.mark.parametrize(
    "environment, option, expected",
    [
        ({"CI": "true"}, [], "ci 150"),
        ({"CI": ""}, [], "dev 60"),
        ({"CI": "true"}, ["--hypothesis-profile=nightly"], "nightly 5000"),
        ({"CI": "true", "HYPOTHESIS_PROFILE": "dev"}, [], "dev 60"),
    ],
)
def test_the_profile_in_force(tmp_path, environment, option, expected):
    """``CI=true`` loads our ``ci`` profile (not Hypothesis's built-in one of the same name);
    ``--hypothesis-profile`` and ``HYPOTHESIS_PROFILE`` choose another."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "from hypothesis import settings\n"
        "def test_probe():\n"
        "    print('PROFILE', settings._current_profile, settings().max_examples)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "HYPOTHESIS_PROFILE")}
    env.update(environment)
    result = subprocess.run(
        [
            sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
            "--rootdir", str(ROOT), "--confcutdir", str(ROOT),
            "-c", str(ROOT / "pyproject.toml"), *option,
            str(ROOT / "tests" / "conftest.py"), str(probe),
        ],
        capture_output=True, text=True, env=env, cwd=ROOT, check=False,
    )  # fmt: skip
    assert f"PROFILE {expected}" in result.stdout, result.stdout + result.stderr
