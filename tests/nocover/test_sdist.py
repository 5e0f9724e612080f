"""The sdist can test and gate itself (issue 18): built from a clean copy of what git tracks,
it carries every one of those files, so an unpacked sdist has the suite, the obligation
registry, the mutant catalogue and the pinned toolchain."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_SHIPPED = {".gitignore"}  # a checkout's own, meaningless in an sdist


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout: the files git tracks are what an sdist must carry")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [name for name in listed.stdout.split("\0") if name]


def test_the_sdist_carries_every_tracked_file(tmp_path):
    tracked = _tracked()
    source = tmp_path / "checkout"
    for name in tracked:  # a clean copy: the build writes its egg-info into the tree it builds
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
         str(tmp_path / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (archive,) = (tmp_path / "dist").glob("*.tar.gz")
    with tarfile.open(archive) as sdist:
        shipped = {name.partition("/")[2] for name in sdist.getnames()}
    missing = sorted(set(tracked) - NOT_SHIPPED - shipped)
    assert not missing, f"tracked but not in the sdist (MANIFEST.in): {missing}"
