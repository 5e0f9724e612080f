"""Closed vocabularies the ADRs fix, written out once for every test that checks them."""

from __future__ import annotations

# ADR-0231 §8.4: no candidate-operator output may carry a field of these names; ADR-0228 §1,
# §7 and §17.11 forbid the same of the run, its attempts and refusals (and add "truth").
FORBIDDEN_OUTPUT_FIELDS = frozenset(
    {
        "answer",
        "final_answer",
        "served_output",
        "proof",
        "verdict",
        "promotion",
        "mutation",
        "teaching_update",
        "pack_update",
        "policy_update",
        "identity_update",
        "workbench_state",
        "runtime_effect",
        "confidence",
        "score",
        "rank",
        "priority",
        "selected",
        "selected_candidate",
        "best",
        "best_candidate",
        "serving_allowed",
        "runnable",
    }
)
FORBIDDEN_RUN_FIELDS = FORBIDDEN_OUTPUT_FIELDS | {"truth"}
