"""practice-loop: CORE's Residual-Gated Practice Loop and the harness that proves it.

The kernel lives in ``practice_loop.kernel``; everything else in this package is the shell
(command line, shipped examples).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
