"""The shipped policy examples (``docs/examples/expected.json``) and the outcome
``prove-policy`` gives each one.

Each entry is a labelled vector: an id, a comment, flags, the file, and its expected outcome
(proven or not, the loader's refusal with its key, the invariants it breaks). The outcome
depends on which versions are registered, so ``prove-policy --adopt`` rewrites the outcomes
in its copy of the tree and the patch shows every example whose outcome an adoption moves;
``tests/cover/test_prove_policy.py`` holds each entry to what the command gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .policy_invariants import InvariantStatus
from .prove_policy import SetProof, prove_set

EXAMPLES_SCHEMA = "practice_loop.policy_examples.v1"
EXPECTED_FILE = "expected.json"
# Generated inputs per property invariant: enough to reach every frame-reachable reason.
OUTCOME_EXAMPLES = 30


def outcome_of(proved: SetProof) -> dict[str, Any]:
    """One file's outcome alone: its refusal, else the invariants of its kind and of the set
    it makes with the versions in force that it breaks."""
    (proof,) = proved.proofs
    refusal = None
    if proof.refusal is not None:
        refusal = {"reason": proof.refusal.reason.value, "where": proof.refusal.where}
    results = [*proof.invariants, *proved.cross_policy]
    broken = [result.name for result in results if result.status is InvariantStatus.BROKEN]
    return {"proven": refusal is None and not broken, "refusal": refusal, "broken": broken}


def prove_example(path: Path) -> SetProof:
    # The golden vectors are the tree's, not the example's: checked once elsewhere.
    return prove_set(
        [path], examples=OUTCOME_EXAMPLES, crosshair_seconds=0, check_golden_vectors=False
    )


def read_examples(directory: Path) -> dict[str, Any]:
    document = json.loads((directory / EXPECTED_FILE).read_text("utf-8"))
    if document.get("schema") != EXAMPLES_SCHEMA:
        raise ValueError(f"{directory / EXPECTED_FILE}: schema is not {EXAMPLES_SCHEMA}")
    return document


def rewrite_outcomes(directory: Path) -> list[str]:
    """Prove every example again and write each outcome that moved; the files it moved."""
    document = read_examples(directory)
    moved = []
    for example in document["examples"]:
        outcome = outcome_of(prove_example(directory / example["file"]))
        if outcome != example["expected"]:
            example["expected"] = outcome
            moved.append(example["file"])
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    (directory / EXPECTED_FILE).write_text(text, "utf-8")
    return moved
