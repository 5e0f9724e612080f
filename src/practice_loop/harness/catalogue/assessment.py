"""Stage refusals (docs/adr/0003 "Refusal shapes"): assessment, proof, residual."""

from __future__ import annotations

from ...kernel import AssessmentStatus, assess, check_proof, project_residuals
from .entry import Recipes
from .forging import sealed, tampered
from .shipped import DU, PR, RI

# The entries: a table, one entry a few lines (kept out of `ruff format`).
# fmt: off
RECIPES = Recipes("stage_refusal", "docs/adr/0003")

RECIPES.add("assessment-frame-source-not-text",
    "assess: a frame whose source text was replaced by None after sealing", "Tampered",
    "assessment.assess", lambda c: assess(tampered(c[DU].frame, source_text=None)), DU)
RECIPES.add("assessment-not-a-frame", "assess: the gate decision handed over as the frame",
    "ForeignType", "assessment.assess", lambda c: assess(c[DU].gate), DU)
RECIPES.add("proof-frame-malformed",
    "check_proof: a frame whose first fact value became -1 after sealing", "Tampered",
    "proof.check_proof",
    lambda c: check_proof(
        tampered(c[RI].frame, facts=(tampered(c[RI].frame.facts[0], value=-1),)),
        c[RI].assessment,
    ), RI)
RECIPES.add("proof-assessment-malformed",
    "check_proof: the string 'runnable' handed over as the assessment", "ForeignType",
    "proof.check_proof", lambda c: check_proof(c[RI].frame, "runnable"), RI)
RECIPES.add("proof-assessment-of-another-frame",
    "check_proof: the runnable_increase frame with proof_refused's genuine assessment", "Genuine",
    "proof.check_proof", lambda c: check_proof(c[RI].frame, c[PR].assessment), RI, PR)
RECIPES.add("proof-assessment-refused",
    "check_proof: the direction_unbound frame with its own refused assessment", "Genuine",
    "proof.check_proof", lambda c: check_proof(c[DU].frame, c[DU].assessment), DU)
RECIPES.add("proof-forged-runnable-assessment",
    "check_proof: direction_unbound's assessment re-sealed runnable with no blocker", "Resealed",
    "proof.check_proof",
    lambda c: check_proof(
        c[DU].frame,
        sealed(c[DU].assessment, status=AssessmentStatus.RUNNABLE, blockers=()),
    ), DU)
RECIPES.add("residual-assessment-malformed",
    "project_residuals: an assessment whose status became a bare string after sealing", "Tampered",
    "residual.project_residuals",
    lambda c: project_residuals(tampered(c[DU].assessment, status="refused")), DU)
RECIPES.add("residual-assessment-runnable",
    "project_residuals: runnable_increase's genuine runnable assessment", "Genuine",
    "residual.project_residuals", lambda c: project_residuals(c[RI].assessment), RI)
# fmt: on
