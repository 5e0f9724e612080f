"""The shipped chains the golden vectors start from, by name (``harness.vectors`` builds
them: a shipped example or a sample line run through ``practice_case``)."""

DU = "example:direction_unbound"
RI = "example:runnable_increase"
PR = "example:proof_refused"
TWO = "example:two_residuals"
AMBIGUOUS = "sample:s20"
NO_PROPOSAL = "sample:s36"
