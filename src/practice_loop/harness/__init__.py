"""The harness: the tools that prove the kernel and the product, for the tests, CI and
reviewers, not for a user of the loop.

- ``obligations`` (the registry and the matrix, standard library only), ``gate_plugin`` (its
  pytest plugin, ``-p practice_loop.harness.gate_plugin``) and ``obligation_gate``
  (``practice-loop gate``);
- ``fuzz``, ``fuzz_plugin``, ``fuzz_database``, ``fuzz_report``: ``practice-loop fuzz``;
- ``byte_fuzz``, ``byte_fuzz_worker``: ``practice-loop fuzz-bytes``;
- ``crosshair_lane``: ``practice-loop contracts`` and ``policy-diff``;
- ``policy_file`` and ``prove_policy``: ``practice-loop prove-policy``;
- ``examples``: hand-built frames the golden vectors and the tests start from.
- ``report_context``: the commit and tool versions every report names;
- ``hypothesis_internals``: the only module that names a private part of Hypothesis;
- ``hypothesis_hook``: Hypothesis's entry point, standard library only (it registers the
  record strategies once the kernel is imported).
- ``vectors`` (``practice-loop vectors``): the golden vectors shipped in ``data/vectors/``,
  and ``catalogue/``, the labelled violation catalogue they and the strategies share.

Several of these need the ``test`` extra (Hypothesis, pytest, CrossHair) and import it where
they use it; this file imports nothing, so the standard-library modules under it load without
that extra. Nothing in the product or Workbench imports this package.
"""
