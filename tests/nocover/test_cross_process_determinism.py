"""Determinism across processes with different ``PYTHONHASHSEED`` (ADR-0226 §9, ADR-0228 §10).

Frames are drawn here, pickled, and replayed through every stage in child processes that
differ only in their hash seed; the canonical bytes of every record must agree byte for byte
with each other and with this process.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from practice_loop.harness.examples import shipped_examples
from practice_loop.kernel import canonical_json
from practice_strategies import build_chain, problem_frames, run_outcome

CHILD = """
import hashlib, pickle, sys
from practice_strategies import build_chain, run_outcome
from practice_loop.kernel import canonical_json

frames = pickle.loads(open(sys.argv[1], "rb").read())
total = hashlib.sha256()
for frame in frames:
    chain = build_chain(frame)
    records = [frame, chain.assessment, *chain.residuals, chain.gate, chain.budget,
               chain.search_input, run_outcome(chain)]
    for record in records:
        total.update(canonical_json(record.to_json()))
print(total.hexdigest())
"""

frame_batches = st.lists(problem_frames(), min_size=5, max_size=12)


def _in_process(frames) -> str:
    total = hashlib.sha256()
    for frame in frames:
        chain = build_chain(frame)
        records = [
            frame,
            chain.assessment,
            *chain.residuals,
            chain.gate,
            chain.budget,
            chain.search_input,
            run_outcome(chain),
        ]
        for record in records:
            total.update(canonical_json(record.to_json()))
    return total.hexdigest()


def _in_child(path: Path, seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


@pytest.mark.obligation("ADR-0226/9.1", "ADR-0226/9.7", "ADR-0226/13.10", "ADR-0228/17.12")
@settings(
    max_examples=3,
    deadline=None,
    # Each example starts child interpreters (slow by design), and writes the one file it reads
    # back at once, so sharing the function-scoped tmp_path between examples is safe.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(frames=frame_batches)
def test_every_identity_is_independent_of_the_hash_seed(frames, tmp_path):
    """ADR-0228 §10, §17.12: no identity depends on process, hash seed or memory layout."""
    frames = [*frames, *(example.frame for example in shipped_examples())]
    path = tmp_path / "frames.pickle"
    path.write_bytes(pickle.dumps(frames))
    digests = {_in_child(path, seed) for seed in ("0", "1", "4242", "random")}
    assert digests == {_in_process(frames)}
