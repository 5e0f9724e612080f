"""What a harness report was made with: the commit and the versions of the tools that judged.

Every report of the harness (fuzz, prove-policy, the gate, mutants, mutation-score) carries
it, so a verdict read later, or beside another one, says which code and which Hypothesis,
pytest or CrossHair gave it. Standard library only: a report of a run without the ``test``
extra still says so, as ``not installed``.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from importlib import metadata
from pathlib import Path

# The tools every report names; a report adds its own (cosmic-ray, crosshair-tool, ...).
TOOLS = ("hypothesis", "pytest")


def distribution_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _git(root: Path, *arguments: str) -> str:
    if shutil.which("git") is None:
        return ""
    done = subprocess.run(
        ["git", *arguments], cwd=root, capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def run_context(root: Path, *distributions: str) -> dict[str, str]:
    """The commit (``+uncommitted`` when the tree differs from it; ``unknown`` outside a git
    checkout), the versions of Python, practice-loop, Hypothesis, pytest and
    ``distributions``."""
    commit = _git(root, "rev-parse", "HEAD")
    dirty = commit and _git(root, "status", "--porcelain")
    return {
        "commit": (commit or "unknown") + ("+uncommitted" if dirty else ""),
        "python": platform.python_version(),
        **{
            name: distribution_version(name)
            for name in dict.fromkeys(("practice-loop", *TOOLS, *distributions))
        },
    }


def context_line(context: dict[str, str]) -> str:
    """The context as one Markdown line: ``commit abc..., python 3.11.7, hypothesis ...``."""
    return ", ".join(f"{key} `{value}`" for key, value in context.items())
