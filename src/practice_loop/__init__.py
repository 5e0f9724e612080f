"""practice-loop: CORE's Residual-Gated Practice Loop and the harness that proves it.

Packages by who uses them (docs/index.md): ``kernel`` (the loop, standard library only),
``product`` (reader, runner, store, verification: what ``run``, ``verify`` and ``show`` use),
``workbench`` (the read-only web display), ``harness`` (the tools that prove them: obligations,
fuzzing, contracts, policy proving) and ``cli``, whose commands load their modules lazily.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
